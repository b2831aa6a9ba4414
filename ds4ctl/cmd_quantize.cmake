# ds4ctl quantize: the GGUF reader/writer, the DS4 catalogue, the converter's recipes and row quantizer.
target_link_libraries(ds4ctl PRIVATE ds4_gguf ds4_quant ds4_convert)
