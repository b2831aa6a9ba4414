# ds4ctl bench: model, kernel throughput probes, sampler (argmax, PRNG).
target_link_libraries(ds4ctl PRIVATE ds4_cuda ds4_loaded_model ds4_model ds4_kernels ds4_kernel_bench ds4_quant ds4_sampler ds4_gguf fmt::fmt)
