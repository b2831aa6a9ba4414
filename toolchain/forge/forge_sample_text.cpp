// The text the forge learns its BPE merges from: technical English prose, C++, Python, shell and
// JSON, about 12 KB, written for this project. Changing it changes every forged vocabulary.
#include "toolchain/forge/forge_vocab.hpp"

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

Gardening notes: tomatoes need full sunlight, regular watering and support from stakes or cages. Prune
the suckers that grow between the stem and the branches. Basil, parsley and thyme grow well in pots on
a balcony. Compost improves the soil; earthworms are a good sign. Harvest beans while they are young and
tender, and pick zucchini before they become enormous. Frost arrives early in northern valleys.

Kitchen: whisk two eggs with milk, flour and a pinch of salt. Heat butter in a pan, pour a thin layer,
cook until golden, flip, and serve with lemon, honey, berries or cheese. Bread dough rises overnight in
a cool place; bake it at high temperature with steam for a crisp crust. Soup simmers slowly with onions,
garlic, carrots, celery, potatoes, lentils and fresh herbs.

History and geography: rivers shaped early cities, trade routes connected distant kingdoms, and printing
spread knowledge quickly across Europe. Mountains divide climates; deserts receive little rain; forests
store carbon; oceans regulate temperature. Volcanoes, glaciers, earthquakes and tides change landscapes
over centuries. Explorers, merchants, scholars, farmers and engineers built bridges, canals and railways.

Physics and chemistry: energy is conserved, momentum is conserved, entropy increases. Light behaves as a
wave and as a particle. Electrons occupy orbitals; atoms bond by sharing or transferring electrons. Acids
donate protons; bases accept them. Catalysts lower activation barriers without being consumed. Gravity
bends the paths of planets, comets, satellites and photons. Magnetic fields surround electric currents.

SELECT user_id, COUNT(*) AS orders FROM purchases WHERE created_at >= '2026-01-01' GROUP BY user_id
HAVING COUNT(*) > 3 ORDER BY orders DESC LIMIT 10;
CREATE TABLE sessions (id INTEGER PRIMARY KEY, token TEXT NOT NULL, expires_at TIMESTAMP);
UPDATE accounts SET balance = balance - 100 WHERE id = 7;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: checksum FILE");
    let bytes = std::fs::read(path).unwrap_or_default();
    let sum: u64 = bytes.iter().map(|&b| b as u64).sum();
    println!("{} bytes, checksum {}", bytes.len(), sum);
}

function debounce(callback, delay) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => callback.apply(this, args), delay);
  };
}
const response = await fetch("/v1/chat/completions", { method: "POST", headers, body: JSON.stringify(payload) });
if (!response.ok) throw new Error(`request failed: ${response.status} ${response.statusText}`);

Music and art: melody, harmony, rhythm, tempo, chords, scales, octaves, violins, pianos, trumpets, drums,
choirs, orchestras, galleries, sculptures, portraits, landscapes, watercolors, charcoal sketches, museums.
Sports: football, basketball, tennis, cycling, swimming, marathon, referee, tournament, champion, trophy.
Emotions: happy, curious, anxious, grateful, surprised, frustrated, hopeful, proud, calm, lonely, excited.
)SAMPLE";
  return kText;
}

}  // namespace ds4::gguf::forge
