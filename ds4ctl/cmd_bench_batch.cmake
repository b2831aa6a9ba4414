# ds4ctl bench-batch: batched decode of several sessions (ds4::BatchStep) against one.
target_link_libraries(ds4ctl PRIVATE ds4_model ds4_sampler fmt::fmt)
