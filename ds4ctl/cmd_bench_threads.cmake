# ds4ctl bench-threads: model and sampler (argmax, PRNG).
target_link_libraries(ds4ctl PRIVATE ds4_model ds4_sampler fmt::fmt)
