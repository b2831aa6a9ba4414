# ds4ctl bench-serve: concurrent clients through the batched serving worker against one.
target_link_libraries(ds4ctl PRIVATE ds4_serving_ds4 fmt::fmt)
