#pragma once
// ResponseChannel: hands a response from the engine worker thread to the connection that owns
// the socket.
//
// Generation runs on the serving worker; the socket belongs to one connection coroutine on its
// strand. The worker never touches the socket: it appends the response head and body bytes here
// (under a mutex) and posts a wake-up to the strand, where the connection takes everything queued
// and writes it. The worker never blocks on a slow client; a client that stops reading hits the
// write timeout, the connection closes, and the channel's cancel flag stops the generation within
// a token. The same flag is set when the client disconnects while waiting.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/serving/generation.hpp"

namespace ds4::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct ResponseHead {
  unsigned status = 200;
  HeaderList headers;      // besides Content-Length / Transfer-Encoding / Connection
  bool streaming = false;  // chunked body follows as send_chunk() calls
  std::string body;        // the whole body when not streaming
};

class ResponseChannel : public std::enable_shared_from_this<ResponseChannel> {
 public:
  // `strand`: the connection's executor, where wake-ups are delivered.
  explicit ResponseChannel(boost::asio::any_io_executor strand);

  // Producer side, any thread. The head comes first, exactly once; finish() ends the response.
  void send_head(ResponseHead head);
  void send_chunk(std::string bytes);
  void finish();
  // Whether the consumer is gone (client disconnected or write failed); producers may stop early
  // and need not answer. A generation cancelled because the server stops is not "gone": its
  // producer still sends its final event, which the connection writes before closing.
  bool consumer_gone() const { return gone_->load(); }
  // Set when the consumer goes away; give it to the generation job.
  const serving::CancelFlag& cancel_flag() const { return cancel_; }

  // Consumer side, on the strand.
  struct Batch {
    std::optional<ResponseHead> head;
    std::string data;
    bool finished = false;
  };
  // Call arm() before take(); then wait on signal(), which completes once producers have queued
  // something since arm() (possibly spuriously).
  void arm();
  Batch take();
  boost::asio::steady_timer& signal() { return signal_; }
  void consumer_closed() {
    gone_->store(true);
    cancel_->store(true);
  }
  // The server stops past its drain time: cancel the generation, wake the consumer.
  void cancel_for_shutdown() {
    cancel_->store(true);
    wake();
  }

 private:
  void wake();

  boost::asio::any_io_executor strand_;
  boost::asio::steady_timer signal_;
  serving::CancelFlag cancel_ = serving::make_cancel_flag();
  serving::CancelFlag gone_ = serving::make_cancel_flag();
  std::mutex mu_;
  std::optional<ResponseHead> head_;
  std::string data_;
  bool finished_ = false;
};

}  // namespace ds4::http
