# ds4ctl generate: model and tokenizer (ds4_loaded_model), sampler, the backend choice (ds4_cuda); ds4_protocol for UTF-8 assembly of the output.
target_link_libraries(ds4ctl PRIVATE ds4_loaded_model ds4_cuda ds4_model ds4_tokenizer ds4_sampler ds4_gguf ds4_protocol fmt::fmt)
