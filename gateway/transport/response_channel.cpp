// Worker -> connection hand-off. See response_channel.hpp.
#include "gateway/transport/response_channel.hpp"

#include <boost/asio/post.hpp>

namespace ds4::http {

ResponseChannel::ResponseChannel(boost::asio::any_io_executor strand)
    : strand_(strand), signal_(strand, boost::asio::steady_timer::time_point::max()) {}

void ResponseChannel::send_head(ResponseHead head) {
  {
    std::lock_guard lock(mu_);
    head_ = std::move(head);
  }
  wake();
}

void ResponseChannel::send_chunk(std::string bytes) {
  if (bytes.empty()) return;
  {
    std::lock_guard lock(mu_);
    data_ += bytes;
  }
  wake();
}

void ResponseChannel::finish() {
  {
    std::lock_guard lock(mu_);
    finished_ = true;
  }
  wake();
}

void ResponseChannel::arm() { signal_.expires_at(boost::asio::steady_timer::time_point::max()); }

ResponseChannel::Batch ResponseChannel::take() {
  Batch b;
  std::lock_guard lock(mu_);
  b.head = std::move(head_);
  head_.reset();
  b.data.swap(data_);
  b.finished = finished_;
  return b;
}

void ResponseChannel::wake() {
  // The timer is only touched on the strand. The signal is level-triggered: a wake-up moves the
  // expiry into the past, which completes a pending wait and makes any wait started later (an
  // awaitable operator may start it after this handler ran) complete at once. The consumer re-arms
  // before each take(), so nothing queued is ever missed; at worst it wakes once for nothing.
  // The posted handler holds only a weak reference: the connection alone owns the channel, so it
  // never outlives the connection's strand and io_context.
  boost::asio::post(strand_, [weak = weak_from_this()] {
    if (auto self = weak.lock())
      self->signal_.expires_at(boost::asio::steady_timer::time_point());  // the clock epoch: past
  });
}

}  // namespace ds4::http
