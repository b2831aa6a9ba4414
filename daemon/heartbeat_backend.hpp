#pragma once
// An EngineBackend decorator that reports every engine call of the worker's sequence (prefill
// chunks, decode steps, clears, truncations, snapshots, restores) to a WorkerHeartbeat, so that the
// daemon's WATCHDOG=1 pings follow the engine worker's actual progress. Everything else is forwarded
// unchanged — every virtual of EngineBackend and EngineSequence, including the optional ones
// (fingerprint, truncate, snapshot, restore) whose defaults would turn the prefix cache off.
#include <memory>

#include "daemon/worker_heartbeat.hpp"
#include "gateway/serving/engine_backend.hpp"

namespace ds4::daemon {

std::shared_ptr<serving::EngineBackend> with_heartbeat(std::shared_ptr<serving::EngineBackend> inner,
                                                       std::shared_ptr<WorkerHeartbeat> heartbeat);

}  // namespace ds4::daemon
