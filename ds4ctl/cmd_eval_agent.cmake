# ds4ctl eval-agent: the agent evaluator (eval_agent/: engine, gateway protocol and serving decode step).
target_link_libraries(ds4ctl PRIVATE ds4_agent_eval ds4_serving_ds4 ds4_loaded_model ds4_cuda ds4_model ds4_config)
