// The text the forge learns its BPE merges from: technical English prose, C++, Python, shell and
// JSON, about 12 KB, written for this project. Changing it changes every forged vocabulary.
#include "engine/gguf/forge/forge_vocab.hpp"

namespace ds4::gguf::forge {

std::string_view forge_sample_text() {
  static constexpr std::string_view kText = R"SAMPLE(
The inference engine reads the model file once, maps it into memory and never copies the weights.
Each layer of the network has an attention block and a mixture of experts. The router scores every
expert for the current token, picks the best six, and only those experts are read from memory. This
is why a model with hundreds of billions of parameters can still answer quickly on one machine: a
single token touches only a small fraction of the weights. The rest stay on disk or in the page cache
until a later token needs them.

Memory bandwidth, not arithmetic, limits decoding speed. When the processor waits for data from the
main memory, the vector units sit idle. Quantization helps twice: smaller weights mean fewer bytes to
move, and more of the model fits in the cache. Two-bit formats store a scale for each block of values
and a short code for every element. The code selects a point on a fixed grid, and the sign bits are
kept separately. Reconstruction multiplies the grid value by the block scale.

Attention compares the query of the new token with the keys of earlier tokens. A sliding window keeps
the most recent rows in full precision, while older rows are compressed: every four tokens become one
row, or every hundred and twenty eight tokens become one row in the deeper layers. An indexer chooses
which compressed rows are worth reading, so the cost of a long conversation grows slowly.

The server accepts requests over HTTP and streams the answer back as server-sent events. Requests wait
in a bounded queue; when the queue is full the server replies with status 429 and a retry hint. Each
request may set the temperature, the nucleus probability, a maximum number of tokens and a list of stop
strings. Tool calls are returned as structured objects with a name, an identifier and JSON arguments.

Operators install the service as a Debian package. The supervisor checks that the machine has enough
memory before it starts the daemon, configures swap and the early out-of-memory killer, and restarts the
daemon if it fails. Logs go to the journal. Metrics report tokens per second, queue depth, cache hits,
resident memory and the time to the first token. A health endpoint answers while the model loads.

Questions people ask: How long does loading take? Why is the first request slower than the second?
What happens when two clients send the same long prompt? The answer to the last one is the prefix
cache: the engine keeps the state of the conversation and reuses it when a new request starts with
the same tokens. Checkpoints on disk let the state survive a restart.

#include <cstdint>
#include <string>
#include <vector>

namespace engine {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  const void* data = nullptr;
};

// Returns the number of elements in the tensor, or zero for an empty shape.
uint64_t element_count(const Tensor& t) {
  if (t.shape.empty()) return 0;
  uint64_t n = 1;
  for (uint64_t d : t.shape) n *= d;
  return n;
}

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  void run(int tasks, const std::function<void(int)>& fn);

 private:
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

template <class T>
T clamp(T value, T low, T high) {
  return value < low ? low : (value > high ? high : value);
}

for (int layer = 0; layer < n_layers; ++layer) {
  const auto& weights = model.layers[layer];
  hidden = rms_norm(hidden, weights.attn_norm, 1e-6f);
  hidden = attention(hidden, weights, cache, position);
  hidden = moe(hidden, weights.experts, router_top_k);
}

}  // namespace engine

def softmax(values):
    largest = max(values)
    exps = [math.exp(v - largest) for v in values]
    total = sum(exps)
    return [e / total for e in exps]

def sample(logits, temperature=1.0, top_p=0.95, rng=None):
    if temperature == 0:
        return max(range(len(logits)), key=lambda i: logits[i])
    probs = softmax([x / temperature for x in logits])
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    kept, mass = [], 0.0
    for index in order:
        kept.append(index)
        mass += probs[index]
        if mass >= top_p:
            break
    weights = [probs[i] for i in kept]
    return rng.choices(kept, weights=weights, k=1)[0]

class Tokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.ranks = {pair: rank for rank, pair in enumerate(merges)}

    def encode(self, text):
        tokens = []
        for word in self.split(text):
            tokens.extend(self.bpe(word))
        return tokens

$ sudo apt install ./ds4d_0.1.0_amd64.deb
$ systemctl status ds4d
$ journalctl -u ds4d --since "10 minutes ago"
$ curl -s http://127.0.0.1:8080/v1/models | jq .
$ ds4ctl inspect /usr/share/ds4d/models/model.gguf
$ ds4ctl plan --memory 128G --context 32768
$ free -h && cat /proc/meminfo | grep -i huge
$ git log --oneline --graph --decorate | head -n 20
$ cmake -S . -B build -G Ninja && cmake --build build --parallel 2

{"model": "deepseek-v4-flash", "messages": [{"role": "system", "content": "You are a helpful assistant."},
 {"role": "user", "content": "Write a function that reverses a linked list."}], "stream": true,
 "temperature": 0.6, "top_p": 0.95, "max_tokens": 2048, "tools": [{"type": "function", "function":
 {"name": "get_weather", "description": "Get the current weather for a city", "parameters": {"type":
 "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius",
 "fahrenheit"]}}, "required": ["city"]}}}]}

{"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1735689600, "choices": [{"index": 0,
 "delta": {"role": "assistant", "content": "Here is"}, "finish_reason": null}], "usage": {"prompt_tokens":
 42, "completion_tokens": 17, "total_tokens": 59}}

Error handling matters as much as speed. A malformed file must produce a clear message that names the
file, the field and the byte offset, never a crash. Configuration errors should say which key was wrong
and which values are allowed. When the machine runs low on memory, the daemon should shed load before
the kernel kills it: reject new requests, shrink caches, and write a warning to the log.

Testing follows the same idea. Unit tests check each kernel against a slow reference implementation.
Integration tests start the whole service, send real requests and compare the answers with recorded
ones. Fuzzing feeds random bytes to every parser. Benchmarks measure tokens per second, memory traffic
and latency percentiles, and they print ratios measured side by side in the same run.

Numbers: 1, 2, 3, 10, 42, 128, 256, 512, 1024, 2048, 4096, 65536, 1048576, 3.14159, 2.71828, 0.5, 1e-6.
Dates and times: 2026-11-29 08:00:00 UTC, Monday, January, February, March, April, May, June, July,
August, September, October, November, December. Units: bytes, kilobytes, megabytes, gigabytes, seconds,
milliseconds, microseconds, tokens per second, requests per minute, percent.

Why did the build fail? The compiler could not find the header, because the include path did not
contain the source directory. After adding it, the linker complained about an undefined reference,
because the library was listed before the object that used it. Reordering the libraries fixed it.
Would you like me to explain the difference between static and shared libraries, or show how to write
a minimal CMake project that builds one executable, one library and one test?

Summarize the following article in three sentences. Translate this paragraph into French. Explain how a
hash table handles collisions. Compare merge sort with quick sort. List the steps to reset a password.
Describe the water cycle for a ten year old. Write a short poem about autumn leaves falling on a quiet
river. What is the capital of Australia? How many legs does a spider have? Which planet is the largest?
)SAMPLE";
  return kText;
}

}  // namespace ds4::gguf::forge
