# ds4ctl eval-agent: the agent evaluation library (engine + gateway protocol).
target_link_libraries(ds4ctl PRIVATE ds4_agent_eval ds4_model)
