# ds4ctl quantize: the GGUF reader/writer, the DS4 catalogue and the quantizers.
target_link_libraries(ds4ctl PRIVATE ds4_gguf ds4_quant)
