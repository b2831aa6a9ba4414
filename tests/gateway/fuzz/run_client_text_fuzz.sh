#!/usr/bin/env bash
# Builds the client-text fuzzer (tests/gateway/fuzz/client_text_fuzz.cpp) with clang (address +
# undefined sanitizers) from the renderer, tokenizer and GGUF reader libraries, and runs it for
# the given seconds from its checked-in seeds on the vocabulary of MODEL.gguf. Exit status: 0
# when nothing was found, non-zero on a crash or a broken property.
#   run_client_text_fuzz.sh CLANGXX REPO_ROOT OUT_DIR SECONDS MODEL.gguf SOURCES_LIST
# SOURCES_LIST: the libraries' sources, one a line with their own compile options, written by
# CMake (cmake/Ds4FuzzSources.cmake), so no list here can go stale.
set -euo pipefail
cxx=$1 root=$2 out=$3 seconds=$4 model=$5 list=$6
mkdir -p "$out/corpus" "$out/artifacts" "$out/obj"
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
  -fno-sanitize-recover=undefined -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB -I"$root")
main="$root/tests/gateway/fuzz/client_text_fuzz.cpp"
# Boost.JSON's implementation (the build links the compiled library instead).
boost_json_src="$root/tests/gateway/protocol/fuzz/boost_json_src.cpp"
# Recompile a source when it or any header of the folders compiled is newer than its object.
mapfile -t dirs < <(cut -d' ' -f1 "$list" | xargs -n1 dirname | sort -u)
newest_header=$(for d in "${dirs[@]}"; do ls "$d"/*.hpp 2>/dev/null || true; done | xargs ls -t | head -n 1)
objects=()
compile() {  # compile SOURCE [OPTIONS...]
  local src=$1 obj
  shift
  obj="$out/obj/$(basename "$(dirname "$src")")_$(basename "$src" .cpp).o"
  if [[ ! -f "$obj" || "$src" -nt "$obj" || "$newest_header" -nt "$obj" ]]; then
    "$cxx" "${flags[@]}" "$@" -c "$src" -o "$obj.new"
    mv "$obj.new" "$obj"
  fi
  objects+=("$obj")
}
while read -r src options; do
  # shellcheck disable=SC2086
  compile "$src" $options
done < "$list"
compile "$boost_json_src"
compile "$main"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "${objects[@]}" -o "$out/client_text_fuzz" -lspdlog -lfmt -lxxhash -pthread
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export DS4D_FUZZ_TOKENIZER_MODEL=$model
exec "$out/client_text_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=2048 \
  -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$out/corpus" "$root/tests/gateway/fuzz/corpus-client-text"
