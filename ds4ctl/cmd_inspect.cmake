target_link_libraries(ds4ctl PRIVATE ds4_gguf)
