#include "client/load/load_report.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gmmscore::load {
namespace {

// A minimal streaming JSON writer: the caller opens and closes objects and
// arrays; commas and quoting are handled here. Non-finite numbers become
// null (JSON has no NaN).
class JsonWriter {
 public:
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(const std::string& key) {
    Separate();
    Quote(key);
    out_ += ':';
    after_key_ = true;
  }
  void String(const std::string& value) {
    Separate();
    Quote(value);
  }
  void Number(double value) {
    Separate();
    if (!std::isfinite(value)) {
      out_ += "null";
    } else if (value == std::floor(value) && std::abs(value) < 1e15) {
      absl::StrAppend(&out_, static_cast<int64_t>(value));
    } else {
      absl::StrAppendFormat(&out_, "%.6g", value);
    }
  }
  void Bool(bool value) {
    Separate();
    out_ += value ? "true" : "false";
  }
  template <typename T>
  void Field(const std::string& key, const T& value) {
    Key(key);
    if constexpr (std::is_same_v<T, bool>) {
      Bool(value);
    } else if constexpr (std::is_arithmetic_v<T>) {
      Number(static_cast<double>(value));
    } else {
      String(value);
    }
  }
  std::string Take() { return std::move(out_); }

 private:
  void Open(char c) {
    Separate();
    out_ += c;
    first_ = true;
  }
  void Close(char c) {
    out_ += c;
    first_ = false;
  }
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_ && !out_.empty()) out_ += ',';
    first_ = false;
  }
  void Quote(const std::string& s) {
    out_ += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (c < 0x20) {
            absl::StrAppendFormat(&out_, "\\u%04x", c);
          } else {
            out_ += static_cast<char>(c);
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

void WriteSummary(JsonWriter& j, const std::string& key, const LatencySummary& s) {
  j.Key(key);
  j.BeginObject();
  j.Field("count", s.count);
  j.Field("mean", s.mean);
  j.Field("p50", s.p50);
  j.Field("p90", s.p90);
  j.Field("p95", s.p95);
  j.Field("p99", s.p99);
  j.Field("max", s.max);
  j.EndObject();
}

void WriteServer(JsonWriter& j, const ServerBreakdown& b) {
  j.Key("server");
  j.BeginObject();
  j.Field("device", b.device);
  j.Field("seconds", b.seconds);
  j.Field("cpu_cores", b.cpu_cores);
  j.Field("jobs", b.jobs);
  j.Field("batches", b.batches);
  j.Field("frames", b.frames);
  j.Field("frames_per_batch", b.frames_per_batch);
  j.Field("jobs_per_batch", b.jobs_per_batch);
  j.Field("queue_wait_ms_per_job", b.queue_wait_ms);
  j.Field("worker_wait_ms_per_job", b.worker_wait_ms);
  j.Field("answer_ms_per_job", b.answer_ms);
  j.Field("pack_ms_per_batch", b.pack_ms);
  j.Field("score_ms_per_batch", b.score_ms);
  j.Field("backend_busy", b.backend_busy);
  j.Field("in_scheduler_ms_per_job", b.in_scheduler_ms);
  j.Field("answers", b.answers);
  j.Field("send_wait_ms_per_answer", b.send_wait_ms);
  j.Field("send_ms_per_answer", b.send_ms);
  j.EndObject();
}

void WritePoint(JsonWriter& j, const PointResult& p) {
  const PointMetrics& m = p.metrics;
  j.BeginObject();
  j.Field("streams", p.streams);
  j.Field("channels", p.channels);
  j.Field("cq_threads", p.cq_threads);
  j.Field("realtime", p.realtime);
  j.Field("chunk_frames", p.chunk_frames);
  j.Field("measured_s", m.seconds);
  j.Key("throughput");
  j.BeginObject();
  j.Field("frames_per_s", m.frames_per_s);
  j.Field("chunks_per_s", m.chunks_per_s);
  j.Field("offered_frames_per_s", p.offered_frames_per_s);
  j.Field("stream_equivalents", m.stream_equivalents);
  j.Field("real_time_factor", m.real_time_factor);
  j.EndObject();
  WriteSummary(j, "latency_ms", m.latency_ms);
  WriteSummary(j, "send_lag_ms", m.send_lag_ms);
  if (m.to_server_ms.count > 0) {
    WriteSummary(j, "to_server_ms", m.to_server_ms);
    WriteSummary(j, "in_server_ms", m.in_server_ms);
    WriteSummary(j, "from_server_ms", m.from_server_ms);
  }
  j.Field("chunks_due", m.chunks_due);
  j.Field("chunks_answered", m.chunks_answered);
  j.Field("chunks_unanswered", m.chunks_unanswered);
  j.Field("late_chunks", m.late_chunks);
  j.Key("stream_status");
  j.BeginObject();
  for (const auto& [code, count] : p.stream_status) j.Field(code, count);
  j.EndObject();
  j.Field("streams_failed", p.streams_failed);
  j.Field("streams_failed_after_answers", p.streams_failed_after_answers);
  j.Field("first_error", p.first_error);
  j.Field("unexpected_answers", p.unexpected_answers);
  j.Field("client_cpu_cores", p.client_cpu_cores);
  j.Key("stability");
  j.BeginObject();
  j.Field("stable", p.stability.stable);
  j.Field("reason", p.stability.reason);
  j.EndObject();
  j.Key("windows");
  j.BeginArray();
  for (const WindowMetrics& w : m.windows) {
    j.BeginObject();
    j.Field("start_s", w.start_s);
    j.Field("frames_per_s", w.frames_per_s);
    j.Field("mean_ms", w.mean_ms);
    j.Field("p99_ms", w.p99_ms);
    j.Field("chunks", w.chunks);
    j.EndObject();
  }
  j.EndArray();
  if (p.verify.has_value()) {
    j.Key("verify");
    j.BeginObject();
    j.Field("checked", p.verify->checked);
    j.Field("mismatched", p.verify->mismatched);
    j.Field("skipped", p.verify->skipped);
    j.Field("max_error", p.verify->max_error);
    j.Field("first_mismatch", p.verify->first_mismatch);
    j.EndObject();
  }
  if (p.server.has_value()) WriteServer(j, *p.server);
  j.Field("within_slo", p.within_slo);
  j.EndObject();
}

// The latency after the send, split by the server's times (answers that
// carried them).
std::string FormatServerSplit(const PointMetrics& m) {
  auto part = [](const char* what, const LatencySummary& s) {
    return absl::StrFormat("%s %.2f (p99 %.2f)", what, s.mean, s.p99);
  };
  return absl::StrFormat("  by the server's times (%d answers), ms mean: %s + %s + %s\n",
                         m.to_server_ms.count, part("to the server's read", m.to_server_ms),
                         part("in the server", m.in_server_ms),
                         part("back to this read", m.from_server_ms));
}

std::string StatusList(const PointResult& p) {
  std::vector<std::string> parts;
  for (const auto& [code, count] : p.stream_status) parts.push_back(absl::StrCat(code, " ", count));
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

}  // namespace

std::string FormatPoint(const PointResult& p, double slo_ms) {
  const PointMetrics& m = p.metrics;
  std::string out = absl::StrFormat(
      "streams %d (%d channel%s, %s, %s, %d-frame chunks, %.1f s measured): %.0f frames/s",
      p.streams, p.channels, p.channels == 1 ? "" : "s",
      p.cq_threads > 0 ? absl::StrFormat("%d completion queues", p.cq_threads) : "callback API",
      p.realtime ? "real time" : "as fast as possible", p.chunk_frames, m.seconds, m.frames_per_s);
  if (p.realtime) absl::StrAppendFormat(&out, " of %.0f offered", p.offered_frames_per_s);
  absl::StrAppendFormat(&out, ", %.0f chunks/s, RTF %.3f, %.1f real-time stream equivalents\n",
                        m.chunks_per_s, m.real_time_factor, m.stream_equivalents);
  const LatencySummary& l = m.latency_ms;
  absl::StrAppendFormat(&out,
                        "  latency ms: p50 %.2f  p90 %.2f  p95 %.2f  p99 %.2f  max %.2f  (mean "
                        "%.2f; send lag p99 %.2f)\n",
                        l.p50, l.p90, l.p95, l.p99, l.max, l.mean, m.send_lag_ms.p99);
  if (m.to_server_ms.count > 0) out += FormatServerSplit(m);
  absl::StrAppendFormat(&out, "  load generator: %.2f cores busy", p.client_cpu_cores);
  // Per answer, so that generators of different loads (and hosts) compare.
  if (m.chunks_per_s > 0) {
    absl::StrAppendFormat(&out, " (%.0f us of CPU an answer)", 1e6 * p.client_cpu_cores / m.chunks_per_s);
  }
  out += "\n";
  absl::StrAppendFormat(&out, "  chunks %d, late %d, unanswered %d; streams: %s", m.chunks_due,
                        m.late_chunks, m.chunks_unanswered, StatusList(p));
  if (p.streams_failed > 0) {
    absl::StrAppendFormat(&out, "; of the %d failed, %d after answers, %d before any answer", p.streams_failed,
                          p.streams_failed_after_answers,
                          p.streams_failed - p.streams_failed_after_answers);
  }
  if (!p.first_error.empty()) absl::StrAppendFormat(&out, " (first: %s)", p.first_error);
  absl::StrAppendFormat(&out, "; %s\n",
                        p.stability.stable ? "stable" : "NOT stable: " + p.stability.reason);
  if (p.verify.has_value()) {
    absl::StrAppendFormat(&out, "  verify: %d checked, %d mismatched, %d skipped, max error %.2g%s\n",
                          p.verify->checked, p.verify->mismatched, p.verify->skipped,
                          p.verify->max_error,
                          p.verify->first_mismatch.empty() ? ""
                                                           : "; first: " + p.verify->first_mismatch);
  }
  if (p.server.has_value()) {
    const ServerBreakdown& b = *p.server;
    absl::StrAppendFormat(&out, "  %s\n", FormatBreakdown(b));
    if (b.answers > 0) {
      absl::StrAppendFormat(&out,
                            "  time per chunk: %.2f ms in the server's scheduler + %.2f waiting to "
                            "be sent + %.2f sending, of %.2f ms mean latency -> %.2f ms reading, "
                            "network and client\n",
                            b.in_scheduler_ms, b.send_wait_ms, b.send_ms, l.mean,
                            l.mean - b.in_scheduler_ms - b.send_wait_ms - b.send_ms);
    } else {
      absl::StrAppendFormat(&out,
                            "  time per chunk: %.2f ms in the server's scheduler of %.2f ms mean "
                            "latency -> %.2f ms gRPC, network, reactor and client\n",
                            b.in_scheduler_ms, l.mean, l.mean - b.in_scheduler_ms);
    }
  }
  if (slo_ms > 0) {
    absl::StrAppendFormat(&out, "  SLO p99 <= %.1f ms, no failures: %s\n", slo_ms,
                          p.within_slo ? "pass" : "FAIL");
  }
  return out;
}

std::string ReportJson(const LoadReport& report) {
  JsonWriter j;
  const RunDescription& r = report.run;
  j.BeginObject();
  j.Key("run");
  j.BeginObject();
  j.Field("server", r.server);
  j.Field("models", r.models);
  j.Field("device", r.device);
  j.Field("features", r.features);
  j.Field("realtime", r.realtime);
  j.Field("chunk_frames", r.chunk_frames);
  j.Field("duration_s", r.duration_s);
  j.Field("chunks", r.chunks);
  j.Field("slo_ms", r.slo_ms);
  j.Field("verify_fraction", r.verify_fraction);
  j.Field("date", r.date);
  j.Field("command_line", r.command_line);
  j.EndObject();
  j.Key("points");
  j.BeginArray();
  for (const PointResult& p : report.points) WritePoint(j, p);
  j.EndArray();
  if (report.search.has_value()) {
    j.Key("search");
    j.BeginObject();
    j.Field("slo_ms", r.slo_ms);
    j.Field("max_streams_within_slo", report.search->best);
    j.Field("first_failing_streams", report.search->first_failing);
    j.EndObject();
  }
  j.EndObject();
  return j.Take() + "\n";
}

std::string ReportCsv(const LoadReport& report) {
  std::string out =
      "streams,channels,realtime,chunk_frames,measured_s,frames_per_s,chunks_per_s,"
      "offered_frames_per_s,real_time_factor,latency_mean_ms,latency_p50_ms,latency_p90_ms,"
      "latency_p95_ms,latency_p99_ms,latency_max_ms,send_lag_p99_ms,chunks_due,late_chunks,"
      "chunks_unanswered,streams_failed,stream_status,stable,verify_checked,verify_mismatched,"
      "server_cpu_cores,server_frames_per_batch,server_queue_wait_ms,server_worker_wait_ms,"
      "server_pack_ms,server_score_ms,server_answer_ms,server_backend_busy,"
      "client_cpu_cores,within_slo,cq_threads\n";
  for (const PointResult& p : report.points) {
    const PointMetrics& m = p.metrics;
    std::vector<std::string> status;
    for (const auto& [code, count] : p.stream_status) status.push_back(absl::StrCat(code, "=", count));
    absl::StrAppendFormat(&out, "%d,%d,%d,%d,%.3f,%.1f,%.1f,%.1f,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
                                "%.3f,%d,%d,%d,%d,%s,%d,",
                          p.streams, p.channels, p.realtime, p.chunk_frames, m.seconds,
                          m.frames_per_s, m.chunks_per_s, p.offered_frames_per_s,
                          m.real_time_factor, m.latency_ms.mean, m.latency_ms.p50,
                          m.latency_ms.p90, m.latency_ms.p95, m.latency_ms.p99, m.latency_ms.max,
                          m.send_lag_ms.p99, m.chunks_due, m.late_chunks, m.chunks_unanswered,
                          p.streams_failed, absl::StrJoin(status, ";"), p.stability.stable);
    if (p.verify.has_value()) {
      absl::StrAppendFormat(&out, "%d,%d,", p.verify->checked, p.verify->mismatched);
    } else {
      out += ",,";
    }
    if (p.server.has_value()) {
      const ServerBreakdown& b = *p.server;
      absl::StrAppendFormat(&out, "%.3f,%.2f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,", b.cpu_cores,
                            b.frames_per_batch, b.queue_wait_ms, b.worker_wait_ms, b.pack_ms,
                            b.score_ms, b.answer_ms, b.backend_busy);
    } else {
      out += ",,,,,,,,";
    }
    // Last, so that the columns before keep their places for older readers.
    absl::StrAppendFormat(&out, "%.3f,%d,%d\n", p.client_cpu_cores, p.within_slo, p.cq_threads);
  }
  return out;
}

absl::StatusOr<std::vector<PointResult>> ReadPointsCsv(const std::string& text) {
  const std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty()) return absl::InvalidArgumentError("empty CSV");
  const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  std::vector<PointResult> points;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = absl::StrSplit(lines[i], ',');
    if (cells.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "CSV line %d has %d fields, the header %d", i + 1, cells.size(), header.size()));
    }
    auto get = [&](const std::string& name) {
      for (size_t c = 0; c < header.size(); ++c) {
        double value = 0;
        if (header[c] == name && absl::SimpleAtod(cells[c], &value)) return value;
      }
      return 0.0;
    };
    PointResult p;
    p.streams = static_cast<int>(get("streams"));
    p.channels = static_cast<int>(get("channels"));
    p.cq_threads = static_cast<int>(get("cq_threads"));  // 0 in CSVs from before the column
    p.realtime = get("realtime") != 0;
    p.chunk_frames = static_cast<int>(get("chunk_frames"));
    p.offered_frames_per_s = get("offered_frames_per_s");
    PointMetrics& m = p.metrics;
    m.seconds = get("measured_s");
    m.frames_per_s = get("frames_per_s");
    m.chunks_per_s = get("chunks_per_s");
    m.real_time_factor = get("real_time_factor");
    m.latency_ms = {.count = static_cast<int64_t>(get("chunks_due")),
                    .mean = get("latency_mean_ms"),
                    .p50 = get("latency_p50_ms"),
                    .p90 = get("latency_p90_ms"),
                    .p95 = get("latency_p95_ms"),
                    .p99 = get("latency_p99_ms"),
                    .max = get("latency_max_ms")};
    m.chunks_due = static_cast<int64_t>(get("chunks_due"));
    m.late_chunks = static_cast<int64_t>(get("late_chunks"));
    m.chunks_unanswered = static_cast<int64_t>(get("chunks_unanswered"));
    p.streams_failed = static_cast<int64_t>(get("streams_failed"));
    p.client_cpu_cores = get("client_cpu_cores");
    p.within_slo = get("within_slo") != 0;
    points.push_back(std::move(p));
  }
  return points;
}

CapacitySearch CapacityOf(const std::vector<PointResult>& points) {
  CapacitySearch capacity;
  for (const PointResult& p : points) {
    if (!p.within_slo && (capacity.first_failing == 0 || p.streams < capacity.first_failing)) {
      capacity.first_failing = p.streams;
    }
  }
  for (const PointResult& p : points) {
    if (p.within_slo && p.streams > capacity.best &&
        (capacity.first_failing == 0 || p.streams < capacity.first_failing)) {
      capacity.best = p.streams;
    }
  }
  return capacity;
}

absl::Status WriteFile(const std::string& path, const std::string& contents) {
  auto failure = [&path](const char* what, int error) {
    return absl::Status(absl::ErrnoToStatusCode(error),
                        absl::StrFormat("cannot %s %s: %s", what, path, std::strerror(error)));
  };
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return failure("create", errno);
  const bool written = std::fwrite(contents.data(), 1, contents.size(), file) == contents.size();
  const int write_error = errno;
  if (!written) {
    std::fclose(file);
    return failure("write", write_error);
  }
  if (std::fclose(file) != 0) return failure("write", errno);
  return absl::OkStatus();
}

}  // namespace gmmscore::load
