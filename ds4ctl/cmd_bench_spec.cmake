# ds4ctl bench-spec: exact speculation per drafter and K through the serving decode step.
target_link_libraries(ds4ctl PRIVATE ds4_serving_ds4 ds4_model ds4_config ds4_sampler fmt::fmt)
