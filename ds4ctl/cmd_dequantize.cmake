# ds4ctl dequantize: the GGUF reader/writer and the quant types' row decoders.
target_link_libraries(ds4ctl PRIVATE ds4_gguf ds4_quant)
