#include "client/load/load_stream.h"

#include <utility>

namespace gmmscore::load {

LoadStream::LoadStream(const StreamPlan& plan, const FeatureSource* features, Pacer* pacer,
                       AnswerVerifier* verifier, std::function<void()> on_done)
    : plan_(plan),
      features_(features),
      pacer_(pacer),
      verifier_(verifier),
      on_done_(std::move(on_done)) {}

void LoadStream::Start(grpc::ChannelInterface* channel, grpc::CompletionQueue* queue) {
  call_ = queue != nullptr ? NewCqLoadCall(channel, queue, this) : NewCallbackLoadCall(channel, this);
  *config_request_.mutable_config() = *plan_.config;
  {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = true;  // the config; chunks wait for its OnWriteDone
  }
  if (!plan_.realtime) {
    // Nothing of this object after Start: a call that fails at once may
    // already have run the done callback, whose owner may delete us.
    call_->Start(&config_request_, &response_);
    return;
  }
  // Pacer ticks write from outside the reactions: hold the call open until
  // the last tick (Tick releases it), which also keeps this object alive here.
  call_->AddHold();
  call_->Start(&config_request_, &response_);
  pacer_->Schedule(plan_.first_due_ns, [this] { Tick(0); });
}

std::vector<ChunkRecord> LoadStream::SnapshotRecords() const {
  absl::MutexLock lock(&mu_);
  return records_;
}

bool LoadStream::StoppingLocked(int64_t next_due_ns) const {
  return next_due_ns >= stop_ns_.load(std::memory_order_relaxed) ||
         (plan_.max_chunks > 0 && static_cast<int64_t>(records_.size()) >= plan_.max_chunks);
}

void LoadStream::Tick(int64_t k) {
  const int64_t due = plan_.first_due_ns + k * plan_.period_ns;
  Actions actions;
  bool more = false;
  {
    absl::MutexLock lock(&mu_);
    if (!ended_ && !closing_) {
      if (StoppingLocked(due)) {
        closing_ = true;
      } else {
        records_.push_back({.due_ns = due, .frames = plan_.chunk_frames});
        waiting_.push_back(k);
        more = true;
      }
      NextWriteLocked(&actions);
    }
  }
  Perform(actions);
  if (more) {
    pacer_->Schedule(due + plan_.period_ns, [this, k] { Tick(k + 1); });
  } else {
    call_->RemoveHold();  // no tick will touch the call again
  }
}

void LoadStream::NextWriteLocked(Actions* actions) {
  if (write_in_flight_ || writes_done_ || ended_) return;
  if (plan_.realtime) {
    if (!waiting_.empty()) {
      const int64_t k = waiting_.front();
      waiting_.pop_front();
      WriteChunkLocked(k, actions);
      return;
    }
  } else if (!closing_) {
    const int64_t now = NowNs();
    if (StoppingLocked(now)) {
      closing_ = true;
    } else if (sent_ - answered_ < plan_.max_outstanding) {
      records_.push_back({.due_ns = now, .frames = plan_.chunk_frames});
      WriteChunkLocked(static_cast<int64_t>(records_.size()) - 1, actions);
      return;
    } else {
      return;  // the window is full: the next answer sends
    }
  }
  if (closing_) {
    writes_done_ = true;
    actions->writes_done = true;
  }
}

void LoadStream::WriteChunkLocked(int64_t k, Actions* actions) {
  write_in_flight_ = true;
  records_[k].sent_ns = NowNs();
  ++sent_;
  if (plan_.audio != nullptr) {
    const int64_t samples = int64_t{plan_.chunk_frames} * plan_.samples_per_frame;
    plan_.audio->Chunk(plan_.index, k * samples, samples, request_.mutable_audio());
  } else {
    features_->Chunk(plan_.index, k * plan_.chunk_frames, plan_.chunk_frames, request_.mutable_chunk());
  }
  actions->write = true;
}

void LoadStream::Perform(const Actions& actions) {
  if (actions.write) call_->Write(&request_);
  if (actions.writes_done) call_->WritesDone();
}

void LoadStream::OnWriteDone(bool ok) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = false;
    if (!ok) {
      ended_ = true;  // the call is over; its status comes with OnDone
      waiting_.clear();
    } else {
      NextWriteLocked(&actions);
    }
  }
  Perform(actions);
}

void LoadStream::OnReadDone(bool ok) {
  if (!ok) {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    waiting_.clear();
    return;
  }
  const int64_t now = NowNs();
  const absl::StatusOr<AnswerHead> head = response_.Head();
  const int64_t first_frame = head.ok() ? static_cast<int64_t>(head->first_frame) : -1;
  // The server's times on this clock (one host: one wall clock).
  int64_t server_read_ns = 0, server_held_ns = 0;
  if (head.ok() && head->timing.has_value() && head->timing->chunk_read_unix_us() > 0) {
    server_read_ns = RunNsOfUnixMicros(head->timing->chunk_read_unix_us());
    server_held_ns = head->timing->held_us() * 1000;
  }
  Actions actions;
  bool sample = false;
  {
    absl::MutexLock lock(&mu_);
    // An audio stream's answers come one per chunk, in order, whatever
    // their frames; the one after the last chunk is the half-close's.
    const bool audio = plan_.audio != nullptr;
    const int64_t k = audio ? audio_answers_++ : first_frame / plan_.chunk_frames;
    if (audio && k >= static_cast<int64_t>(records_.size()) && closing_) {
      // the front end's last frames: no chunk of its own
    } else if (head.ok() && (audio || first_frame % plan_.chunk_frames == 0) &&
               k < static_cast<int64_t>(records_.size()) &&
        records_[k].sent_ns != 0 && records_[k].answered_ns == 0) {
      records_[k].answered_ns = now;
      if (server_read_ns != 0) {
        records_[k].server_read_ns = server_read_ns;
        records_[k].server_encoded_ns = server_read_ns + server_held_ns;
      }
      ++answered_;
      sample = !audio && verifier_ != nullptr && verifier_->ShouldSample(plan_.index, k);
    } else {
      ++unexpected_answers_;
    }
    if (!plan_.realtime) NextWriteLocked(&actions);
  }
  if (sample) {
    // The read token is ours until the next Read; the copy shares the
    // answer's slices, and the verifier parses it on its own thread.
    verifier_->SubmitAnswer(plan_.index, first_frame, plan_.chunk_frames, response_);
  }
  Perform(actions);
  call_->Read(&response_);
}

void LoadStream::OnDone(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    status_ = status;
  }
  // The owner may destroy this object as soon as it hears: call a copy.
  std::function<void()> done = on_done_;
  done();
}

}  // namespace gmmscore::load
