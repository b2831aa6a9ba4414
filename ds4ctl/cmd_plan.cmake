# ds4ctl plan: the capacity planner, ds4_host for /proc/meminfo, ds4_cuda for the device line.
target_link_libraries(ds4ctl PRIVATE ds4_planner ds4_host ds4_cuda)
