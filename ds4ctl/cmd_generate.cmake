# ds4ctl generate: model, tokenizer and sampler.
target_link_libraries(ds4ctl PRIVATE ds4_model ds4_tokenizer ds4_sampler ds4_gguf fmt::fmt)
