#pragma once
// The exit statuses ds4d and ds4d-supervisor share, defined once. systemd reads them: the unit's
// RestartPreventExitStatus=78 stops the restart loop on a configuration error, because restarting
// with the same configuration cannot help. ds4ctl's own statuses are its commands' business.
namespace ds4::config {

inline constexpr int kExitOk = 0;            // stopped on request
inline constexpr int kExitRuntime = 1;       // runtime failure (port taken, gave up restarting)
inline constexpr int kExitConfigError = 78;  // EX_CONFIG: bad configuration, or a plan that cannot work

}  // namespace ds4::config
