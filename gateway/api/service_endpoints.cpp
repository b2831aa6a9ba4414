// GET /health, /health/live, /metrics, /v1/models: the endpoints that describe the service
// rather than run the model. /health is readiness, /health/live liveness; both are public so that
// probes need no secret. The answers: docs/api.md §health-and-models.
#include <boost/json.hpp>

#include "gateway/api/endpoints.hpp"
#include "gateway/api/model_names.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"

namespace ds4::http {
namespace json = boost::json;

void add_service_endpoints(Router& router, EndpointEnv env) {
  serving::Service& service = env.service;
  serving::Metrics& metrics = env.metrics;
  const ServerConfig config = env.config;

  router.add(
      "GET", "/health",
      [&service](RequestContext&) {
        switch (service.state()) {
          case serving::ServiceState::Ready: {
            // Serving, but refusing new work (the memory floor): not ready for more.
            if (auto reason = service.admission_refusal())
              return Reply::json(503, json::object{{"status", "degraded"}, {"reason", *reason}});
            // Still ready when the checkpoint directory is unusable (the service runs without disk
            // checkpoints), but the reason is shown.
            json::object o{{"status", "ok"}};
            const auto& sc = service.config();
            // Gateway mode: each upstream engine's state; not ready while none is up.
            if (sc.remote) {
              o["upstreams"] = json::parse(sc.remote->status_json());
              if (!sc.remote->available()) {
                o["status"] = "degraded";
                o["reason"] = "no upstream engine is up";
                return Reply::json(503, std::move(o));
              }
            }
            // The local worker's sessions: running now, at most, waiting.
            if (!sc.remote)
              o["sessions"] =
                  json::object{{"active", service.running()}, {"max", sc.max_batch}, {"queued", service.queued()}};
            if (sc.hot_bytes == 0 && (sc.cache_dir.empty() || sc.disk_bytes == 0))
              return Reply::json(200, std::move(o));
            const auto stats = service.cache_stats();
            json::object cache{{"warm_sessions", stats.warm_sessions},
                               {"warm_bytes", stats.warm_bytes},
                               {"disk_checkpoints", stats.disk_files},
                               {"disk_bytes", stats.disk_bytes}};
            if (auto problem = service.cache_health(); !problem.empty()) cache["disk_error"] = problem;
            o["cache"] = std::move(cache);
            return Reply::json(200, std::move(o));
          }
          case serving::ServiceState::Loading:
            return Reply::json(503, json::object{{"status", "loading"}, {"progress", service.load_progress()}});
          case serving::ServiceState::Failed:
            return Reply::json(503, json::object{{"status", "failed"}, {"error", service.failure()}});
          case serving::ServiceState::Stopping: break;
        }
        return Reply::json(503, json::object{{"status", "stopping"}});
      },
      /*is_public=*/true);

  router.add(
      "GET", "/health/live",
      [](RequestContext&) {
        return Reply::json(200, json::object{{"status", "alive"}});
      },
      /*is_public=*/true);

  router.add("GET", "/metrics", [&metrics](RequestContext&) {
    return Reply::text(200, "text/plain; version=0.0.4; charset=utf-8", metrics.render());
  });

  // The served name first, then each exact alias (model_names.hpp), all the same model.
  router.add("GET", "/v1/models", [&service, config](RequestContext&) {
    json::array data;
    if (auto backend = service.backend()) {
      for (const auto& name : listed_model_names(config, *backend)) {
        json::object m;
        m["id"] = name;
        m["object"] = "model";
        m["created"] = 0;
        m["owned_by"] = "ds4d";
        m["context_length"] = backend->context_length();
        data.push_back(std::move(m));
      }
    }
    return Reply::json(200, json::object{{"object", "list"}, {"data", std::move(data)}});
  });
}

void add_endpoints(Router& router, EndpointEnv env) {
  add_service_endpoints(router, env);
  add_token_endpoints(router, env);
  add_chat_endpoint(router, env);
  add_completion_endpoint(router, env);
  add_messages_endpoint(router, env);
  add_responses_endpoint(router, env);
  add_engine_endpoints(router, env);
}

}  // namespace ds4::http
