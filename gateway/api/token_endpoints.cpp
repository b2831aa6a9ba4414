// POST /tokenize and POST /detokenize: the model's tokenizer over HTTP, for clients that count
// or budget tokens and for debugging prompts.
//
//   /tokenize   {"content": "text", "parse_special": true, "with_pieces": false}
//               -> {"tokens": [ids]}  or, with pieces, {"tokens": [{"id": n, "piece": "..."}]}
//               parse_special (default true) turns the DS4 control strings (<｜User｜>, <think>,
//               ...) into their control tokens, exactly as rendered prompts are tokenized;
//               false keeps them as plain text. An answer longer than
//               ServerConfig::max_tokenize_response_bytes is a 413 (code response_too_large).
//   /detokenize {"tokens": [ids]} -> {"content": "text"}; an id outside the vocabulary is a 400
//               naming tokens[i]. Bytes that are not valid UTF-8 (a token list cut inside a
//               character) come back as U+FFFD so the answer is always valid JSON.
#include <boost/json.hpp>

#include "gateway/api/endpoint_support.hpp"
#include "gateway/api/endpoints.hpp"
#include "gateway/protocol/utf8_assembler.hpp"

namespace ds4::http {
namespace json = boost::json;

namespace {

bool optional_bool(const json::object& body, std::string_view key, bool fallback) {
  auto it = body.find(key);
  if (it == body.end() || it->value().is_null()) return fallback;
  if (!it->value().is_bool()) throw protocol::RequestError(std::string(key), std::string(key) + " must be a boolean");
  return it->value().get_bool();
}

std::string valid_utf8(std::string_view bytes) {
  protocol::Utf8Assembler assembler;
  std::string out = assembler.push(bytes);
  out += assembler.flush();
  return out;
}

}  // namespace

void add_token_endpoints(Router& router, EndpointEnv env) {
  serving::Service& service = env.service;

  const size_t max_response = env.config.max_tokenize_response_bytes;
  router.add("POST", "/tokenize", [&service, max_response](RequestContext& ctx) {
    auto b = require_backend(service);
    if (!b.backend) return b.reply;
    try {
      json::value body = parse_json_body(ctx.request);
      const json::object& obj = body.get_object();
      auto it = obj.find("content");
      if (it == obj.end() || !it->value().is_string())
        throw protocol::RequestError("content", "content must be a string");
      std::string_view text = it->value().get_string();
      bool special = optional_bool(obj, "parse_special", true);
      bool pieces = optional_bool(obj, "with_pieces", false);
      auto tokens = special ? b.backend->encode(text) : b.backend->encode_plain(text);
      // The answer is written straight into its text, bounded: with pieces it is ~20x the input,
      // and a DOM of one JSON object per token costs far more than the text.
      std::string out = "{\"tokens\":[";
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i) out += ',';
        if (pieces) {
          out += "{\"id\":" + std::to_string(tokens[i]) + ",\"piece\":";
          out += json::serialize(json::string(valid_utf8(b.backend->token_bytes(tokens[i]))));
          out += '}';
        } else {
          out += std::to_string(tokens[i]);
        }
        if (out.size() > max_response)
          return api_error(413,
                           "the /tokenize answer would exceed " + std::to_string(max_response) + " bytes (" +
                               std::to_string(tokens.size()) + " tokens" + (pieces ? " with pieces" : "") +
                               "); send less text" + (pieces ? " or with_pieces false" : ""),
                           "content", "response_too_large");
      }
      out += "]}";
      return Reply::text(200, "application/json", std::move(out));
    } catch (const protocol::RequestError& e) {
      return request_error_reply(e);
    }
  });

  router.add("POST", "/detokenize", [&service](RequestContext& ctx) {
    auto b = require_backend(service);
    if (!b.backend) return b.reply;
    try {
      json::value body = parse_json_body(ctx.request);
      const json::object& obj = body.get_object();
      auto it = obj.find("tokens");
      if (it == obj.end() || !it->value().is_array())
        throw protocol::RequestError("tokens", "tokens must be an array of token ids");
      std::vector<serving::Token> ids;
      const json::array& arr = it->value().get_array();
      for (size_t i = 0; i < arr.size(); ++i) {
        std::string param = "tokens[" + std::to_string(i) + "]";
        if (!arr[i].is_int64() && !arr[i].is_uint64())
          throw protocol::RequestError(param, param + " must be an integer");
        // Ids above INT64_MAX arrive as uint64: quote them as they were sent, never wrapped negative.
        std::string shown =
            arr[i].is_int64() ? std::to_string(arr[i].get_int64()) : std::to_string(arr[i].get_uint64());
        bool in_range = arr[i].is_int64() ? arr[i].get_int64() >= 0 &&
                                                static_cast<uint64_t>(arr[i].get_int64()) < b.backend->vocab_size()
                                          : arr[i].get_uint64() < b.backend->vocab_size();
        if (!in_range)
          throw protocol::RequestError(param, param + " = " + shown + " is outside the vocabulary (0.." +
                                                  std::to_string(b.backend->vocab_size() - 1) + ")");
        int64_t id = arr[i].is_int64() ? arr[i].get_int64() : static_cast<int64_t>(arr[i].get_uint64());
        ids.push_back(static_cast<serving::Token>(id));
      }
      return Reply::json(200, json::object{{"content", valid_utf8(b.backend->decode(ids))}});
    } catch (const protocol::RequestError& e) {
      return request_error_reply(e);
    }
  });
}

}  // namespace ds4::http
