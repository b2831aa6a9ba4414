# ds4ctl generate: model, tokenizer and sampler; ds4_protocol for UTF-8 assembly of the output.
target_link_libraries(ds4ctl PRIVATE ds4_cuda ds4_model ds4_tokenizer ds4_sampler ds4_gguf ds4_protocol fmt::fmt)
