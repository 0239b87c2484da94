// ModelRepository: the models a daemon serves, prepared on its scoring
// backends (one per GPU: its devices), looked up by name; loaded at start and
// changed while the daemon runs (Load, Unload: the ModelAdmin service).
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<ModelRepository> repo,
//                        ModelRepository::LoadDirectory("/srv/models", backend.get()));
//   GMM_ASSIGN_OR_RETURN(std::shared_ptr<const ServedModel> model, repo->Find("spk1"));
//   GMM_ASSIGN_OR_RETURN(ModelRepository::LoadResult loaded, repo->Load("spk1"));  // replace
//
// Versions: Find hands out the version served now, shared; whoever holds it
// (a stream's plan) keeps scoring with it after a Load replaces it or an
// Unload removes it, and its memory is freed when the last holder lets go.
//
// Devices and replicas: a model is placed on every device or on those its
// RepositoryOptions::placement names, and each version holds one prepared
// replica per device it is placed on (ServedModel::replicas). Load prepares
// every replica before the new version is served, so a replacement is seen
// on all devices at once, and a failure on any device changes nothing.
// The memory budget holds per device memory (RepositoryOptions::memory_of:
// --devices 0,0 runs two schedulers, a replica each, over one GPU and its
// one budget).
//
// Thread safety: all methods are thread-safe; Load and Unload are serialised
// among themselves and never block Find for longer than a pointer swap.
#ifndef GMMSCORE_SERVER_MODEL_REPOSITORY_H_
#define GMMSCORE_SERVER_MODEL_REPOSITORY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/score/scoring_backend.h"
#include "server/model_aligner.h"
#include "server/model_front_end.h"

namespace gmmscore {

// What clients asked of one served version, for /metrics (per-model
// labels). Shared by the copies of a ServedModel; counted where a stream or
// request is planned (scoring_plan.h CountStream / CountRequest / CountFrames).
struct ModelUsage {
  std::atomic<int64_t> streams{0};   // streams opened naming it
  std::atomic<int64_t> requests{0};  // Score requests naming it
  std::atomic<int64_t> frames{0};    // frames sent to be scored with it
};

struct ServedModel {
  std::string name;    // what clients ask for
  std::string source;  // the file it came from, or "memory"
  std::string format;  // "native", "kaldi-text", ... or "memory"
  absl::Duration load_time;  // reading and preparing it
  // The replica on the first device it is placed on (dims, states, the
  // model itself: the same on every device).
  std::shared_ptr<const PreparedModel> prepared;
  // replicas[d]: this version prepared on the repository's device d, null
  // where it is not placed. Empty for a model made outside a repository:
  // then `prepared` counts as device 0's.
  std::vector<std::shared_ptr<const PreparedModel>> replicas;
  uint64_t version = 1;  // 1, then +1 per replacement of this name
  // Frames of this model one backend call scores at most (the config
  // file's per-model batching limit); 0: the scheduler's max_batch_frames.
  int64_t max_batch_frames = 0;
  // How exactly it is scored (the config file's per-model precision).
  Precision precision = Precision::kExact;
  // Forced alignment with this version (the Align RPC): set for a CMU
  // Sphinx model directory loaded with a pronunciation dictionary, null
  // otherwise; the aligner over the first device it is placed on (its
  // checks and rates are the same on every device). Built with the
  // version, and released with it (by the last request still aligning with
  // it).
  std::shared_ptr<ModelAligner> aligner;
  // aligners[d]: its aligner over the repository's device d (scoring
  // there), null where it is not placed. Empty when `aligner` is null or
  // the model was made outside a repository.
  std::vector<std::shared_ptr<ModelAligner>> aligners;
  // The front end of audio streams (model_front_end.h); null: none, and
  // no_front_end says why.
  std::shared_ptr<const FeaturePipeline> front_end;
  std::string no_front_end;
  std::shared_ptr<ModelUsage> usage = std::make_shared<ModelUsage>();

  // Untied models only (prepared->tied() is false); dim, states and sizes
  // of any model are on `prepared`.
  const DiagGmmModel& model() const { return prepared->model(); }
  // The replica on device `device`; null when it is not placed there.
  std::shared_ptr<const PreparedModel> replica(int device) const;
  // Its aligner over device `device` (aligners[device], or `aligner` on
  // device 0 when aligners is empty); null when it cannot align there.
  std::shared_ptr<ModelAligner> aligner_on(int device) const;
  // The devices it is placed on, ascending.
  std::vector<int> devices() const;
  // Bytes the backends hold for it, all replicas together: device bytes on
  // a GPU, the host scoring form on the CPU backend (which scores from it in
  // place).
  int64_t resident_bytes() const;
  // The same for the replica on `device` (0 when not placed there).
  int64_t resident_bytes_on(int device) const;
};

// Which models can align (ServedModel::aligner): pronunciation
// dictionaries for CMU Sphinx model directories.
struct AlignDictionaries {
  // Per model name; overrides `default_dictionary`.
  std::map<std::string, std::string> per_model;
  // For every Sphinx model directory without its own; empty: none.
  std::string default_dictionary;
  ModelAlignerOptions aligner;
  // device_engines[d]: the engine of the aligners over device d (a GPU's
  // own, align_engine_factory.h); where absent or empty, aligner.engine.
  std::vector<AlignEngineFactory> device_engines;

  // The dictionary for `name` ("" for none); *own: whether it is the
  // model's own (per_model) rather than the default.
  std::string For(const std::string& name, bool* own) const;
};

struct RepositoryOptions {
  // Resident bytes all versions together (served, and replaced ones still in
  // use) may hold on each device; a Load beyond it is RESOURCE_EXHAUSTED.
  // 0: no budget.
  int64_t memory_budget_bytes = 0;
  // Per device (backend) index, the memory it holds its models in: indexes
  // with the same value share one budget (the daemon gives the GPU ordinal
  // of --devices, so 0,0 counts both schedulers' replicas against GPU 0).
  // Empty: every index its own.
  std::vector<int> memory_of;
  // Per model name: the devices (indexes into the repository's backends,
  // ascending, distinct, at least one) it is placed on; a model not named
  // here is placed on every device.
  std::map<std::string, std::vector<int>> placement;
  // Names in the directory not loaded at start (loaded later through Load).
  std::vector<std::string> skip_at_start;
  // Per model name: ServedModel::max_batch_frames of every version loaded.
  std::map<std::string, int64_t> max_batch_frames;
  // Per model name: ServedModel::precision of every version loaded.
  std::map<std::string, Precision> precision;
  // The dictionaries that give Sphinx model directories an aligner. A
  // model's own dictionary on a model that is not a Sphinx directory fails
  // its load (INVALID_ARGUMENT); the default applies to Sphinx directories
  // only.
  AlignDictionaries align;
  // Per model name: the config file's front_end section (ModelConfig).
  std::map<std::string, FrontEndSource> front_ends;
  // Each model loaded (at start and by Load) is warmed on its devices for
  // batches of this many frames, or of its own max_batch_frames
  // (WarmServedModel, model_warm_up.h); a warm-up's error fails the load.
  // 0: no warm-up.
  int64_t warm_up_frames = 0;
};

class ModelRepository {
 public:
  // Loads every regular file directly in `dir` as a model named by the file
  // name without its last extension ("spk1.mdl" -> "spk1"), whatever its
  // format (detected by content: native, Kaldi, HTK MMF), and every
  // subdirectory that holds a CMU Sphinx model, named by the directory
  // (read with LoadAnyModel: tied-mixture models are prepared tied);
  // other subdirectories and names starting with '.' are skipped. Each is
  // prepared on `backend`, which must outlive the repository, and given an
  // aligner when a dictionary applies to it (RepositoryOptions::dictionary).
  // NOT_FOUND if `dir` is not a directory; INVALID_ARGUMENT if it holds no
  // model or two files give the same name; a file's load or Prepare error
  // (its code kept, the message prefixed with the path) otherwise.
  // RESOURCE_EXHAUSTED if the models exceed options.memory_budget_bytes.
  static absl::StatusOr<std::unique_ptr<ModelRepository>> LoadDirectory(
      const std::string& dir, ScoringBackend* backend, const RepositoryOptions& options = {});
  // The same over several devices, each model prepared on those it is placed
  // on (RepositoryOptions::placement). INVALID_ARGUMENT also for no backend,
  // a null one, or a placement naming a device out of range, none, or one
  // twice.
  static absl::StatusOr<std::unique_ptr<ModelRepository>> LoadDirectory(
      const std::string& dir, const std::vector<ScoringBackend*>& devices,
      const RepositoryOptions& options = {});

  // The names LoadDirectory gives the models in `dir` (files of a model
  // format by their stem, Sphinx model directories by their name), whether
  // loaded at start or not; empty when `dir` cannot be listed.
  static std::set<std::string> ModelNamesIn(const std::string& dir);

  // The same for models already in memory (tests, embedding). INVALID_ARGUMENT
  // for an empty list, an empty or duplicate name, or a null model.
  static absl::StatusOr<std::unique_ptr<ModelRepository>> FromModels(
      std::vector<std::pair<std::string, std::shared_ptr<const DiagGmmModel>>> models,
      ScoringBackend* backend);
  // Over several devices, with options.placement and the memory budget.
  static absl::StatusOr<std::unique_ptr<ModelRepository>> FromModels(
      std::vector<std::pair<std::string, std::shared_ptr<const DiagGmmModel>>> models,
      const std::vector<ScoringBackend*>& devices, const RepositoryOptions& options);

  // The version served now. NOT_FOUND naming `name` and the models served.
  absl::StatusOr<std::shared_ptr<const ServedModel>> Find(absl::string_view name) const;

  // A snapshot of the versions served now, sorted by name.
  std::vector<ServedModel> models() const;
  // The backends' names joined by ',' ("cpu", "cuda:0", "cuda:0,cuda:1").
  const std::string& device() const { return device_; }
  // How many devices (backends) it prepares models on, and device d's name.
  int num_devices() const { return static_cast<int>(backends_.size()); }
  const std::string& device_name(int device) const { return device_names_[device]; }
  // The directory models are loaded from; empty for FromModels.
  const std::string& directory() const { return directory_; }

  struct LoadResult {
    std::shared_ptr<const ServedModel> model;
    bool replaced = false;
  };
  // Reads `name` from directory() (as LoadDirectory names files), prepares
  // it, and serves it from now on in place of the version served (if any).
  // INVALID_ARGUMENT for a name that is not a plain file name; NOT_FOUND if
  // no file in the directory has that name; FAILED_PRECONDITION without a
  // directory; RESOURCE_EXHAUSTED if it would not fit the memory budget
  // (counted with every version still held, the replaced one included);
  // the reader's, Prepare's or the aligner's error otherwise (a bad
  // dictionary fails the load). On error nothing changes.
  absl::StatusOr<LoadResult> Load(const std::string& name);
  // Stops serving `name`; holders keep their version. NOT_FOUND if not
  // served; FAILED_PRECONDITION for the last model served.
  absl::Status Unload(const std::string& name);

  // A stream's adapted version of `base` (live MAP adaptation): `model`
  // prepared on `device` (the stream's; base must be placed there) with
  // base's batch cap and precision, named
  // `label` (for logs), source "adaptation". Not served by name; it counts
  // against the memory budget (as a retired version) while anyone holds
  // it. RESOURCE_EXHAUSTED when it would not fit; Prepare's errors.
  // Published (below), it is served on that device only. INVALID_ARGUMENT
  // when base has no replica on `device`.
  absl::StatusOr<std::shared_ptr<const ServedModel>> PrepareAdapted(
      const ServedModel& base, std::shared_ptr<const DiagGmmModel> model, std::string label,
      int device = 0);
  // Serves a model PrepareAdapted made under `name` from now on, replacing
  // an earlier one published under that name (whose holders keep it).
  // INVALID_ARGUMENT for a name that is not a plain file name, or a model
  // not made by PrepareAdapted; FAILED_PRECONDITION when `name` is a model
  // loaded from a file (an adaptation never replaces one).
  absl::Status Publish(const std::string& name, std::shared_ptr<const ServedModel> model);

  struct MemoryUsage {
    int64_t served_bytes = 0;   // versions served now
    int64_t retired_bytes = 0;  // replaced or unloaded versions still held
    int retired_versions = 0;   // replicas, on memory()
    int64_t budget_bytes = 0;   // per device; 0: none
  };
  // All devices together, and one device.
  MemoryUsage memory() const;
  MemoryUsage memory_on(int device) const;

 private:
  using Snapshot = std::vector<std::shared_ptr<const ServedModel>>;
  // A replaced, unloaded or adapted replica, counted while someone holds it.
  struct RetiredReplica {
    int device = 0;
    std::weak_ptr<const PreparedModel> replica;
  };
  ModelRepository(Snapshot models, std::string directory, std::vector<ScoringBackend*> backends,
                  const RepositoryOptions& options);
  static absl::StatusOr<std::unique_ptr<ModelRepository>> Create(
      std::vector<ServedModel> models, std::vector<ScoringBackend*> backends, std::string directory,
      const RepositoryOptions& options);
  // The devices `name` is placed on.
  std::vector<int> PlacementOf(const std::string& name) const;
  // OK, or RESOURCE_EXHAUSTED when adding adding[d] bytes on each device d
  // would pass the budget of one device memory (memory_of_).
  absl::Status FitsLocked(const std::vector<int64_t>& adding) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(load_mu_);
  // `bytes` on each of `devices`, nothing elsewhere: FitsLocked's argument.
  std::vector<int64_t> OnEach(const std::vector<int>& devices, int64_t bytes) const;
  // Every replica of `model` into retired_.
  void RetireLocked(const ServedModel& model) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ServedModel::max_batch_frames for `name`.
  int64_t MaxBatchFramesOf(const std::string& name) const;
  // ServedModel::precision for `name`.
  Precision PrecisionOf(const std::string& name) const;
  // Retired replicas still held on `device` (-1: every device); drops the
  // ones freed.
  int64_t RetiredBytesLocked(int device, int* versions) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  MemoryUsage MemoryOn(int device) const;

  const std::vector<ScoringBackend*> backends_;
  const std::vector<std::string> device_names_;
  const std::string device_;
  const std::string directory_;
  const int64_t budget_bytes_;
  const std::vector<int> memory_of_;  // per device index; never empty
  const std::map<std::string, std::vector<int>> placement_;
  const std::map<std::string, int64_t> max_batch_frames_;
  const int64_t warm_up_frames_;  // RepositoryOptions::warm_up_frames
  const std::map<std::string, Precision> precision_;
  const AlignDictionaries align_;
  const std::map<std::string, FrontEndSource> front_ends_;

  absl::Mutex load_mu_;  // serialises Load and Unload
  mutable absl::Mutex mu_;
  Snapshot models_ ABSL_GUARDED_BY(mu_);  // sorted by name
  mutable std::vector<RetiredReplica> retired_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_MODEL_REPOSITORY_H_
