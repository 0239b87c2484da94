#include "gtest/gtest.h"
#include "server/daemon.h"

namespace gmmscore {
namespace {

TEST(DaemonOptionsTest, DefaultsAreValid) { EXPECT_TRUE(ValidateDaemonOptions({}).ok()); }

// Each bad option is refused with INVALID_ARGUMENT naming its flag.
TEST(DaemonOptionsTest, EachBadOptionNamesItsFlag) {
  struct Case {
    const char* flag;
    void (*spoil)(DaemonOptions*);
  };
  const Case cases[] = {
      {"--max_batch_frames", [](DaemonOptions* o) { o->scheduler.max_batch_frames = 0; }},
      {"--scheduler_workers", [](DaemonOptions* o) { o->scheduler.num_workers = 0; }},
      {"--max_queued_frames", [](DaemonOptions* o) { o->scheduler.max_queued_frames = 0; }},
      {"--overload_queue_ms",
       [](DaemonOptions* o) { o->scheduler.overload_wait = absl::Milliseconds(-1); }},
      {"--queue_full_wait_ms",
       [](DaemonOptions* o) { o->scheduler.full_queue_wait = absl::Milliseconds(-1); }},
      {"--max_chunk_frames", [](DaemonOptions* o) { o->limits.max_chunk_frames = 0; }},
      {"--max_chunks_in_flight", [](DaemonOptions* o) { o->limits.max_chunks_in_flight = 0; }},
      {"--max_streams", [](DaemonOptions* o) { o->limits.max_streams = 0; }},
      {"--max_request_frames", [](DaemonOptions* o) { o->limits.max_request_frames = 0; }},
      {"--max_message_mb", [](DaemonOptions* o) { o->max_message_bytes = 0; }},
      {"--stream_threads", [](DaemonOptions* o) { o->stream_threads = -1; }},
      {"--max_connection_age_s", [](DaemonOptions* o) { o->max_connection_age = absl::Seconds(-1); }},
      {"--max_connection_age_grace_s",
       [](DaemonOptions* o) { o->max_connection_age_grace = absl::Seconds(-1); }},
      // Past gRPC's int milliseconds (24.8 days), which would wrap negative.
      {"--max_connection_age_s", [](DaemonOptions* o) { o->max_connection_age = absl::Hours(24 * 30); }},
      {"--max_connection_age_grace_s",
       [](DaemonOptions* o) { o->max_connection_age_grace = absl::Hours(24 * 30); }},
      {"--stream_idle_timeout_s",
       [](DaemonOptions* o) { o->limits.stream_idle_timeout = absl::Seconds(-1); }},
      {"--stream_write_timeout_s",
       [](DaemonOptions* o) { o->limits.stream_write_timeout = absl::Seconds(-1); }},
      {"--stream_answer_memory_mb", [](DaemonOptions* o) { o->limits.max_stream_answer_bytes = 0; }},
      {"--answer_memory_mb", [](DaemonOptions* o) { o->limits.max_answer_memory_bytes = -1; }},
      {"--align_max_batch", [](DaemonOptions* o) { o->align.max_batch = 0; }},
      {"--align_workers", [](DaemonOptions* o) { o->align.num_workers = 0; }},
      {"--adaptation_workers", [](DaemonOptions* o) { o->adaptation.workers = 0; }},
      {"--adaptation_backlog_frames", [](DaemonOptions* o) { o->adaptation.max_backlog_frames = 0; }},
      {"--max_saved_adaptations", [](DaemonOptions* o) { o->adaptation.max_saved = 0; }},
      {"--max_align_queued_frames", [](DaemonOptions* o) { o->align.max_queued_frames = 0; }},
      {"--align_queue_delay_us", [](DaemonOptions* o) { o->align.max_queue_delay = absl::Microseconds(-1); }},
      {"--listen", [](DaemonOptions* o) { o->listen_address = "localhost"; }},
      {"--listen", [](DaemonOptions* o) { o->listen_address = "0.0.0.0:http"; }},
      {"--listen", [](DaemonOptions* o) { o->listen_address = ":50051"; }},
      {"--listen", [](DaemonOptions* o) { o->listen_address = "::1:50051"; }},
      {"--listen", [](DaemonOptions* o) { o->listen_address = "127.0.0.1:70000"; }},
      {"--listen", [](DaemonOptions* o) { o->listen_address = "unix:"; }},
      {"--listen", [](DaemonOptions* o) { o->listen_address = "unix:/" + std::string(107, 'x'); }},
      // gmmscored's own gRPC arguments are set by their flags, not over them.
      {"--max_message_mb",
       [](DaemonOptions* o) { o->grpc_args = {{"grpc.max_send_message_length", 1 << 30}}; }},
      {"--max_message_mb",
       [](DaemonOptions* o) { o->grpc_args = {{"grpc.max_receive_message_length", 1}}; }},
      {"--max_connection_age_s",
       [](DaemonOptions* o) { o->grpc_args = {{"grpc.max_connection_age_ms", 1}}; }},
      {"--max_connection_age_grace_s",
       [](DaemonOptions* o) { o->grpc_args = {{"grpc.max_connection_age_grace_ms", 1}}; }},
      {"--grpc_arg", [](DaemonOptions* o) { o->grpc_args = {{"http2.lookahead_bytes", 1}}; }},
  };
  for (const Case& c : cases) {
    DaemonOptions options;
    c.spoil(&options);
    const absl::Status status = ValidateDaemonOptions(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.flag;
    EXPECT_NE(status.message().find(c.flag), std::string::npos) << c.flag << ": " << status;
  }
  for (const char* good : {"0.0.0.0:50051", "localhost:0", "[::1]:50051", "[::]:8080", "unix:/run/gmmscore.sock"}) {
    DaemonOptions options;
    options.listen_address = good;
    EXPECT_TRUE(ValidateDaemonOptions(options).ok()) << good;
  }
  DaemonOptions no_limit;
  no_limit.limits.max_answer_memory_bytes = 0;  // 0: no server-wide limit
  EXPECT_TRUE(ValidateDaemonOptions(no_limit).ok());
  DaemonOptions tuned;
  tuned.grpc_args = {{"grpc.http2.max_frame_size", 1 << 20}, {"grpc.http2.lookahead_bytes", 1 << 22}};
  EXPECT_TRUE(ValidateDaemonOptions(tuned).ok());
}

}  // namespace
}  // namespace gmmscore
