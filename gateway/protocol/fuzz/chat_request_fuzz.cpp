// libFuzzer target: arbitrary bytes -> JSON -> parse_chat_request / parse_completion_request ->
// render_chat. Invariants: parsing either succeeds or throws RequestError (nothing else), and a
// successful render has sorted in-bounds client spans and starts with BOS.
#include <boost/json/parse.hpp>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gateway/protocol/chat_render.hpp"
#include "gateway/protocol/chat_request.hpp"

using namespace ds4::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    boost::system::error_code ec;
    boost::json::parse_options opts;
    opts.max_depth = 64;
    boost::json::value body = boost::json::parse(text, ec, {}, opts);
    if (ec) return 0;
    static ContractStore store(1 << 20);
    try {
        ChatRequest req = parse_chat_request(body);
        RenderResult r = render_chat(req, &store, ContractMode::Warn, RenderOptions{size % 2 ? 393216u : 4096u, true});
        if (r.text.rfind("<｜begin▁of▁sentence｜>", 0) != 0) std::abort();
        size_t last = 0;
        for (auto [b, e] : r.client_spans) {
            if (b < last || b >= e || e > r.text.size()) std::abort();
            last = e;
        }
    } catch (const RequestError&) {
    }
    try {
        CompletionRequest c = parse_completion_request(body);
        (void)completion_frame(c);
    } catch (const RequestError&) {
    }
    return 0;
}
