# ds4ctl bench-cache: the serving layer with its prefix cache on the real engine.
target_link_libraries(ds4ctl PRIVATE ds4_serving_ds4 ds4_kvcache ds4_model fmt::fmt)
