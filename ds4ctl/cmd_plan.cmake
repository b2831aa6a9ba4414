# ds4ctl plan: the capacity planner, and ds4_host for /proc/meminfo.
target_link_libraries(ds4ctl PRIVATE ds4_planner ds4_host)
