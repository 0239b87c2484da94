// The gmmscored binary itself: loads a model directory, logs what it loaded
// where and its address, serves, and on SIGTERM drains (a live stream gets
// its accepted chunks answered, then UNAVAILABLE) and exits 0.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/io/native_model_file.h"
#include "kernels/io/wav_reader.h"
#include "proto/wire_convert.h"
#include "tests/test_daemon.h"

extern char** environ;

namespace gmmscore {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A running gmmscored whose stderr is collected line by line.
class DaemonProcess {
 public:
  explicit DaemonProcess(std::vector<std::string> args) {
    args.insert(args.begin(), GMMSCORE_GMMSCORED);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    EXPECT_EQ(posix_spawn(&pid_, GMMSCORE_GMMSCORED, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    reader_ = std::thread([this, fd = fds[0]] {
      FILE* in = fdopen(fd, "r");
      char line[4096];
      while (fgets(line, sizeof(line), in) != nullptr) {
        absl::MutexLock lock(&mu_);
        lines_.push_back(line);
      }
      fclose(in);
      absl::MutexLock lock(&mu_);
      closed_ = true;
    });
  }
  ~DaemonProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    reader_.join();
  }

  // Waits for a log line containing `text` (or for stderr to close).
  std::string WaitForLine(const std::string& text) {
    absl::MutexLock lock(&mu_);
    auto found = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (closed_) return true;
      for (const std::string& l : lines_) {
        if (absl::StrContains(l, text)) return true;
      }
      return false;
    };
    mu_.AwaitWithTimeout(absl::Condition(&found), absl::Seconds(60));
    for (const std::string& l : lines_) {
      if (absl::StrContains(l, text)) return l;
    }
    return "";
  }
  std::string Log() {
    absl::MutexLock lock(&mu_);
    return absl::StrJoin(lines_, "");
  }
  void Signal(int signal) { kill(pid_, signal); }
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = 0;
  bool exited_ = false;
  std::thread reader_;
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class GmmscoredBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per test process: ctest runs this fixture's tests in parallel,
    // and a shared folder would be removed under a running daemon.
    dir_ = fs::path(::testing::TempDir()) / ("gmmscored_binary_test_models_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (int m = 0; m < 2; ++m) {
      auto model = GenerateSyntheticModel(
          {.num_states = 12, .min_gaussians = 2, .max_gaussians = 4, .dim = 6, .seed = 7u + m});
      ASSERT_TRUE(model.ok());
      ASSERT_TRUE(WriteNativeModel(*model, (dir_ / (m == 0 ? "alpha.gmm" : "beta.gmm")).string())
                      .ok());
      models_.push_back(std::make_shared<const DiagGmmModel>(*std::move(model)));
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::vector<std::shared_ptr<const DiagGmmModel>> models_;
};

TEST_F(GmmscoredBinaryTest, ServesLogsAndDrainsOnSigterm) {
  DaemonProcess daemon({"--model_repository=" + dir_.string(), "--listen=127.0.0.1:0",
                        "--backend=" + TestBackendName()});
  const std::string listening = daemon.WaitForLine("listening on ");
  ASSERT_FALSE(listening.empty()) << daemon.Log();
  const std::string rest = listening.substr(listening.find("listening on ") + 13);
  const std::string address = rest.substr(0, rest.find(' '));
  EXPECT_THAT(daemon.Log(), HasSubstr("model 'alpha' from " + (dir_ / "alpha.gmm").string() +
                                      " (native): 6 dims, 12 states"));
  EXPECT_THAT(daemon.Log(), HasSubstr("model 'beta' from "));

  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(address);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::vector<v1::ModelInfo>> models = (*client)->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].name(), "alpha");
  EXPECT_EQ((*models)[0].dim(), 6u);
  EXPECT_EQ((*models)[0].num_states(), 12u);
  EXPECT_EQ((*models)[1].name(), "beta");
  EXPECT_FALSE((*models)[1].device().empty());

  v1::StreamConfig config;
  config.add_models("alpha");
  config.add_models("beta");
  auto session = (*client)->StartStream(config);
  ASSERT_TRUE(session.ok());
  const FloatMatrix features = GenerateSyntheticFeatures(*models_[0], 40, 1);
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE((*session)->Push(features.view().Rows(k * 10, 10)).ok());
    absl::StatusOr<StreamAnswer> answer = (*session)->Next();
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(answer->first_frame, k * 10);
  }

  daemon.Signal(SIGTERM);
  absl::StatusOr<StreamAnswer> end = (*session)->Next();
  EXPECT_EQ(end.status().code(), absl::StatusCode::kUnavailable) << end.status();
  EXPECT_THAT(std::string(end.status().message()),
              HasSubstr("shutting down; frames [0, 40) of this stream were answered"));
  // gRPC's server shutdown waits (about 5 s) for connected clients to hang
  // up after its GOAWAY; this one has nothing more to say.
  session->reset();
  client->reset();
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Log();
  EXPECT_THAT(daemon.Log(), HasSubstr("SIGTERM: draining"));
  EXPECT_THAT(daemon.Log(), HasSubstr("StreamScore: completion-queue API"));
  // Four chunks, each one fused job over both models (80 model-frames).
  EXPECT_THAT(daemon.Log(), HasSubstr("stopped: 4 chunks scored"));
}

TEST_F(GmmscoredBinaryTest, BadRepositoryExitsWithAClearError) {
  DaemonProcess daemon({"--model_repository=" + (dir_ / "missing").string(),
                        "--listen=127.0.0.1:0", "--backend=cpu"});
  EXPECT_EQ(daemon.Wait(), 1);
  daemon.WaitForLine("cannot start");
  EXPECT_THAT(daemon.Log(), HasSubstr("cannot start: NOT_FOUND: model repository"));
}

TEST_F(GmmscoredBinaryTest, ListenWithoutAPortIsRefused) {
  DaemonProcess daemon({"--model_repository=" + dir_.string(), "--listen=localhost", "--backend=cpu"});
  EXPECT_EQ(daemon.Wait(), 1);
  daemon.WaitForLine("cannot start");
  EXPECT_THAT(daemon.Log(), HasSubstr("--listen 'localhost' is not HOST:PORT"));
}

// stdout and stderr of `command`, and its exit status.
std::pair<int, std::string> Capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(BinariesTest, EveryBinaryPrintsTheProjectVersionAndItsFlags) {
  for (const auto& [binary, name] : std::vector<std::pair<std::string, std::string>>{
           {GMMSCORE_GMMSCORED, "gmmscored"}, {GMMSCORE_CLI_BINARY, "gmmscore"}, {GMMSCORE_LOAD_BINARY, "gmmscore-load"}}) {
    const auto [status, out] = Capture(binary + " --version");
    EXPECT_EQ(status, 0) << name << ": " << out;
    EXPECT_THAT(out, HasSubstr(name + " " + GMMSCORE_PROJECT_VERSION + " (")) << out;
    EXPECT_THAT(out, Not(HasSubstr("Debug build"))) << out;  // absl's default line
  }
  // absl's usage filter looked for a file named after the program and listed
  // no flag of gmmscore-load.
  const auto [status, help] = Capture(std::string(GMMSCORE_LOAD_BINARY) + " --help");
  EXPECT_THAT(help, HasSubstr("--streams"));
  EXPECT_THAT(help, HasSubstr("--audio"));
  EXPECT_THAT(help, Not(HasSubstr("No flags matched")));
}

TEST_F(GmmscoredBinaryTest, MissingRepositoryFlagIsExplained) {
  DaemonProcess daemon({"--listen=127.0.0.1:0"});
  EXPECT_EQ(daemon.Wait(), 1);
  daemon.WaitForLine("cannot start");
  EXPECT_THAT(daemon.Log(), HasSubstr("--model_repository is required"));
}

// Writes `text` to DIR/NAME and returns the path.
std::string WriteFile(const fs::path& dir, const std::string& name, const std::string& text) {
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST_F(GmmscoredBinaryTest, AConfigEntryNamingNoModelWarnsOrStopsUnderStrictConfig) {
  const fs::path etc = dir_.string() + "_typo";
  fs::create_directories(etc);
  // "alpah": a typo of a served model, whose batch cap used to apply to nothing, silently.
  const std::string config = WriteFile(etc, "gmmscored.textproto",
                                       "model_repository: \"" + dir_.string() + "\"\n"
                                       "listen: \"127.0.0.1:0\"\nbackend: \"cpu\"\n"
                                       "models { name: \"alpah\" max_batch_frames: 64 }\n");
  {
    DaemonProcess daemon({"--config=" + config});
    daemon.WaitForLine("listening on ");
    EXPECT_THAT(daemon.Log(), HasSubstr("models entry 'alpah' names no model in the repository"));
  }
  DaemonProcess strict({"--config=" + config, "--strict_config"});
  EXPECT_EQ(strict.Wait(), 1);
  strict.WaitForLine("cannot start");
  EXPECT_THAT(strict.Log(), HasSubstr("'alpah' names no model in the repository"));
  EXPECT_THAT(strict.Log(), HasSubstr("(--strict_config)"));
  fs::remove_all(etc);
}

TEST_F(GmmscoredBinaryTest, ConfigFileSetsValuesAndFlagsOverrideThem) {
  const fs::path etc = dir_.string() + "_etc";
  fs::create_directories(etc);
  const std::string token = "config-test-token-0123456789";
  const std::string token_file = WriteFile(etc, "scoring.token", token + "\n");
  const std::string config = WriteFile(
      etc, "gmmscored.textproto",
      "model_repository: \"" + dir_.string() + "\"\n"
      "listen: \"127.0.0.1:0\"\n"
      "backend: \"cpu\"\n"
      "limits { max_chunk_frames: 77 max_streams: 3 }\n"
      "grpc { stream_api: \"callback\" }\n"
      "auth { scoring_token_file: \"" + token_file + "\" }\n"
      "models { name: \"beta\" load_on_demand: true }\n"
      "models { name: \"alpha\" precision: \"fp32\" max_batch_frames: 64 }\n");
  DaemonProcess daemon({"--config=" + config, "--max_streams=5"});
  const std::string listening = daemon.WaitForLine("listening on ");
  ASSERT_FALSE(listening.empty()) << daemon.Log();
  const std::string rest = listening.substr(listening.find("listening on ") + 13);
  const std::string address = rest.substr(0, rest.find(' '));
  daemon.WaitForLine("limits: ");
  // From the file, except max_streams, which the command line overrides.
  EXPECT_THAT(daemon.Log(), HasSubstr("max_streams 5, max_chunk_frames 77"));
  EXPECT_THAT(daemon.Log(), HasSubstr("scoring token required"));
  EXPECT_THAT(daemon.Log(), HasSubstr("config: " + config));

  ClientOptions options;
  options.bearer_token = token;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(address, options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::vector<v1::ModelInfo>> models = (*client)->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 1u);  // beta loads on demand
  EXPECT_EQ((*models)[0].name(), "alpha");
  v1::StreamConfig stream_config;
  stream_config.add_models("alpha");
  auto session = (*client)->StartStream(stream_config);
  const FloatMatrix features = GenerateSyntheticFeatures(*models_[0], 78, 1);
  ASSERT_TRUE((*session)->Push(features.view().Rows(0, 77)).ok());
  ASSERT_TRUE((*session)->Next().ok());
  (*session)->Push(features.view()).IgnoreError();
  EXPECT_EQ((*session)->Finish().code(), absl::StatusCode::kInvalidArgument);
  session->reset();
  client->reset();
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Log();
  EXPECT_THAT(daemon.Log(), Not(HasSubstr(token)));  // never logged
  EXPECT_THAT(daemon.Log(), HasSubstr("StreamScore: callback API"));
  fs::remove_all(etc);
}

TEST_F(GmmscoredBinaryTest, ConfigGivesASphinxModelItsDictionaryAndItAligns) {
  const std::string model = "/usr/share/pocketsphinx/model/en-us/en-us";
  const std::string dict = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict";
  const std::string wav =
      "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav";
  if (!fs::exists(model) || !fs::exists(dict) || !fs::exists(wav)) GTEST_SKIP() << "pocketsphinx data missing";
  fs::create_directory_symlink(model, dir_ / "en-us");
  const fs::path etc = dir_.string() + "_etc";
  fs::create_directories(etc);
  const std::string config = WriteFile(
      etc, "gmmscored.textproto",
      "model_repository: \"" + dir_.string() + "\"\n"
      "listen: \"127.0.0.1:0\"\n"
      "backend: \"cpu\"\n"
      "align { align_max_batch: 4 align_queue_delay_us: 500 max_align_queued_frames: 50000 "
      "align_workers: 1 align_threads: 1 }\n"
      "models { name: \"en-us\" dictionary: \"" + dict + "\" }\n");
  DaemonProcess daemon({"--config=" + config});
  const std::string listening = daemon.WaitForLine("listening on ");
  ASSERT_FALSE(listening.empty()) << daemon.Log();
  EXPECT_THAT(daemon.Log(), HasSubstr("model 'en-us' aligns (Align) with dictionary " + dict));
  const std::string rest = listening.substr(listening.find("listening on ") + 13);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(rest.substr(0, rest.find(' ')));
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<PcmAudio> audio = ReadSpeechFile(wav, 16000);
  ASSERT_TRUE(audio.ok()) << audio.status();
  v1::AlignRequest request;
  request.set_model("en-us");
  for (const char* word : {"he", "was", "not", "an", "ill", "disposed", "young", "man"}) request.add_words(word);
  PcmToProto(audio->samples, audio->sample_rate, request.mutable_audio());
  absl::StatusOr<v1::AlignResponse> answer = (*client)->Align(request);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->num_frames(), 298u);
  std::vector<std::string> words;
  for (const v1::AlignSegment& segment : answer->words()) {
    if (!segment.filler()) words.push_back(segment.label());
  }
  EXPECT_EQ(absl::StrJoin(words, " "), "he was not an ill disposed young man");
  request.set_model("alpha");
  EXPECT_EQ((*client)->Align(request).status().code(), absl::StatusCode::kFailedPrecondition);
  client->reset();
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Log();
  fs::remove_all(etc);
}

TEST_F(GmmscoredBinaryTest, BadConfigFilesStopTheStartWithAClearError) {
  const fs::path etc = dir_.string() + "_etc";
  fs::create_directories(etc);
  struct Case {
    std::string text;
    int exit_code;
    std::string message;
  };
  const std::string repository = "model_repository: \"" + dir_.string() + "\"\n";
  const std::vector<Case> cases = {
      {"listen: \"127.0.0.1:0\"\nlimits {\n  max_streams: many\n}\n", 2, "line 3, column 16"},
      {"listen: \"127.0.0.1:0\"\nno_such_option: 1\n", 2, "no_such_option"},
      {repository + "backend: \"cpu\"\nlimits { max_streams: 0 }\n", 1, "must be >= 1"},
      {repository + "backend: \"cpu\"\nmodels { name: \"alpha\" backend: \"cuda:3\" }\n", 1,
       "backend 'cuda:3', but this daemon scores on cpu (run a daemon on that backend)"},
      {repository + "backend: \"cpu\"\ndevices: \"all\"\n", 1, "--devices all needs a GPU backend"},
      {repository + "backend: \"cpu\"\ndevices: \"0,1\"\nmodels { name: \"alpha\" devices: 2 }\n", 1,
       "placed on device 2, which this daemon does not score on (its devices: 0,1)"},
      {repository + "backend: \"cpu\"\nmodels { name: \"alpha\" precision: \"fp16\" }\n", 1,
       "precision 'fp16'"},
      {repository + "backend: \"cpu\"\ngrpc { stream_api: \"epoll\" }\n", 1,
       "unknown stream API 'epoll'; use cq or callback"},
      {repository + "backend: \"cpu\"\nalign { align_max_batch: 0 }\n", 1,
       "--align_max_batch, --align_workers and --max_align_queued_frames must be >= 1"},
      {repository + "backend: \"cpu\"\nmodels { name: \"alpha\" dictionary: \"/any.dict\" }\n", 1,
       "only a CMU Sphinx model directory can align; this model is native"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].text);
    const std::string config = WriteFile(etc, "bad" + std::to_string(i) + ".textproto",
                                         cases[i].text);
    DaemonProcess daemon({"--config=" + config, "--listen=127.0.0.1:0"});
    EXPECT_EQ(daemon.Wait(), cases[i].exit_code) << daemon.Log();
    daemon.WaitForLine("cannot start");
    EXPECT_THAT(daemon.Log(), HasSubstr("cannot start"));
    EXPECT_THAT(daemon.Log(), HasSubstr(cases[i].message));
    if (cases[i].exit_code == 2) EXPECT_THAT(daemon.Log(), HasSubstr(config));
  }
  DaemonProcess missing({"--config=" + (etc / "absent.textproto").string()});
  EXPECT_EQ(missing.Wait(), 2);
  missing.WaitForLine("cannot start");
  EXPECT_THAT(missing.Log(), HasSubstr("cannot read config file"));
  fs::remove_all(etc);
}

// --devices with the CPU backend: two CPU backends, one scheduler each, and
// a model placed on one of them by the config file.
TEST_F(GmmscoredBinaryTest, DevicesRunASchedulerEachAndPlaceModels) {
  const fs::path etc = dir_.string() + "_devices";
  fs::create_directories(etc);
  const std::string config = WriteFile(etc, "gmmscored.textproto",
                                       "devices: \"0,1\"\nmodels { name: \"beta\" devices: 1 }\n");
  DaemonProcess daemon({"--config=" + config, "--model_repository=" + dir_.string(),
                        "--listen=127.0.0.1:0", "--backend=cpu"});
  const std::string listening = daemon.WaitForLine("listening on ");
  ASSERT_FALSE(listening.empty()) << daemon.Log();
  EXPECT_THAT(daemon.Log(), HasSubstr("backends: cpu, cpu"));
  const std::string rest = listening.substr(listening.find("listening on ") + 13);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(rest.substr(0, rest.find(' ')));
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::vector<v1::ModelInfo>> models = (*client)->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].device(), "cpu,cpu");  // alpha: everywhere
  EXPECT_EQ((*models)[1].device(), "cpu");      // beta: device 1 only
  v1::StreamConfig stream;
  stream.add_models("beta");
  auto session = (*client)->StartStream(stream);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Push(GenerateSyntheticFeatures(*models_[1], 10, 2).view()).ok());
  absl::StatusOr<StreamAnswer> answer = (*session)->Next();
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->scores.rows(), 10);
  ASSERT_TRUE((*session)->CloseSend().ok());
  EXPECT_TRUE((*session)->Finish().ok());
  session->reset();
  client->reset();
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.Log();
  fs::remove_all(etc);
}

}  // namespace
}  // namespace gmmscore
