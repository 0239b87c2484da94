#include "server/model_repository.h"

#include <algorithm>
#include <functional>
#include <map>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/model_loader.h"
#include "server/client_text.h"
#include "server/log.h"
#include "server/model_warm_up.h"

namespace gmmscore {
namespace {

namespace fs = std::filesystem;

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  return PrefixStatus(path, status);
}

// The model name of a directory entry, or "" if the entry is not a model:
// a regular file by its stem, a CMU Sphinx model directory by its name.
std::string ModelNameOf(const fs::directory_entry& entry) {
  std::error_code error;
  const std::string file_name = entry.path().filename().string();
  if (file_name.empty() || file_name[0] == '.') return "";
  if (entry.is_regular_file(error)) return entry.path().stem().string();
  if (entry.is_directory(error) && DetectModelFormat(entry.path().string()).ok()) {
    return file_name;
  }
  return "";
}

// The aligner of the model at `path` (a `format` model) over `backend`
// when `align` gives it a dictionary; null when none applies.
absl::StatusOr<std::shared_ptr<ModelAligner>> AlignerFor(const std::string& path, const std::string& name,
                                                         ModelFormat format, ScoringBackend* backend,
                                                         const AlignDictionaries& align,
                                                         const ModelAlignerOptions& options) {
  bool own = false;
  const std::string dictionary = align.For(name, &own);
  if (dictionary.empty()) return nullptr;
  if (format != ModelFormat::kSphinx) {
    if (!own) return nullptr;
    return absl::InvalidArgumentError(absl::StrFormat(
        "model '%s' has a dictionary (%s), but only a CMU Sphinx model directory can align; this "
        "model is %s",
        name, dictionary, ModelFormatName(format)));
  }
  absl::StatusOr<std::unique_ptr<ModelAligner>> aligner = ModelAligner::Create(path, dictionary, backend, options);
  if (!aligner.ok()) return PrefixStatus(absl::StrFormat("aligner with dictionary %s", dictionary), aligner.status());
  return std::shared_ptr<ModelAligner>(*std::move(aligner));
}

// The model's aligners over backends[d] for every d in `devices` (null
// elsewhere), each with device d's engine; empty when it has none. One per
// device memory (memory_of: schedulers over one GPU share it), so that
// Align goes where the router sends it, off a failing device too. Each
// error names the device.
absl::StatusOr<std::vector<std::shared_ptr<ModelAligner>>> AlignersFor(
    const std::string& path, const std::string& name, ModelFormat format,
    const std::vector<ScoringBackend*>& backends, const std::vector<int>& devices, const std::vector<int>& memory_of,
    const AlignDictionaries& align) {
  std::vector<std::shared_ptr<ModelAligner>> aligners(backends.size());
  for (int d : devices) {
    const auto same_memory = std::find_if(devices.begin(), devices.end(), [&](int e) {
      return e < d && aligners[e] != nullptr && memory_of[e] == memory_of[d];
    });
    if (same_memory != devices.end()) {
      aligners[d] = aligners[*same_memory];
      continue;
    }
    ModelAlignerOptions options = align.aligner;
    if (d < static_cast<int>(align.device_engines.size()) && align.device_engines[d]) {
      options.engine = align.device_engines[d];
    }
    absl::StatusOr<std::shared_ptr<ModelAligner>> aligner = AlignerFor(path, name, format, backends[d], align, options);
    if (!aligner.ok()) {
      return backends.size() == 1 ? aligner.status() : PrefixStatus(backends[d]->name(), aligner.status());
    }
    if (*aligner == nullptr) return std::vector<std::shared_ptr<ModelAligner>>();
    aligners[d] = *std::move(aligner);
  }
  return aligners;
}

// `model` prepared on backends[d] for every d in `devices`: replicas[d],
// null elsewhere. Each error names the device.
absl::StatusOr<std::vector<std::shared_ptr<const PreparedModel>>> PrepareReplicas(
    const LoadedModel& model, const std::vector<ScoringBackend*>& backends,
    const std::vector<int>& devices) {
  std::vector<std::shared_ptr<const PreparedModel>> replicas(backends.size());
  for (int d : devices) {
    ScoringBackend* backend = backends[d];
    auto prepared = model.tied != nullptr ? backend->PrepareTied(model.tied) : backend->Prepare(model.untied);
    if (!prepared.ok()) {
      return backends.size() == 1 ? prepared.status() : PrefixStatus(backend->name(), prepared.status());
    }
    replicas[d] = *std::move(prepared);
  }
  return replicas;
}

// The first non-null replica.
std::shared_ptr<const PreparedModel> FirstReplica(
    const std::vector<std::shared_ptr<const PreparedModel>>& replicas) {
  for (const auto& replica : replicas) {
    if (replica != nullptr) return replica;
  }
  return nullptr;
}

// Reads and prepares the model at `path`, to be served as `name`, on
// backends[d] for each d in `devices`, with an aligner over each of their
// memories (memory_of) if `align` gives it a dictionary. `fits(host_bytes)` is asked before
// preparing, with the host size as the estimate of what each backend will
// hold.
absl::StatusOr<ServedModel> ReadAndPrepare(const std::string& path, const std::string& name,
                                           const std::vector<ScoringBackend*>& backends,
                                           const std::vector<int>& devices, const std::vector<int>& memory_of,
                                           const AlignDictionaries& align,
                                           const std::map<std::string, FrontEndSource>& front_ends,
                                           const std::function<absl::Status(int64_t)>& fits) {
  const absl::Time start = absl::Now();
  absl::StatusOr<ModelFormat> format = DetectModelFormat(path);
  if (!format.ok()) return WithPath(format.status(), path);
  // Tied-mixture models (Sphinx semi-continuous / PTM, multi-stream HTK)
  // stay tied: the backend evaluates each codebook Gaussian once per frame.
  absl::StatusOr<LoadedModel> model = LoadAnyModel(path);
  if (!model.ok()) return WithPath(model.status(), path);
  if (fits) {
    absl::Status status = fits(model->ByteSize());
    if (!status.ok()) return WithPath(status, path);
  }
  absl::StatusOr<std::vector<std::shared_ptr<const PreparedModel>>> replicas =
      PrepareReplicas(*model, backends, devices);
  if (!replicas.ok()) return WithPath(replicas.status(), path);
  std::shared_ptr<const PreparedModel> prepared = FirstReplica(*replicas);
  absl::StatusOr<std::vector<std::shared_ptr<ModelAligner>>> aligners =
      AlignersFor(path, name, *format, backends, devices, memory_of, align);
  if (!aligners.ok()) return WithPath(aligners.status(), path);
  const auto configured = front_ends.find(name);
  absl::StatusOr<ModelFrontEnd> front_end =
      FrontEndForModel(path, *format, static_cast<int>(prepared->dim()),
                       configured == front_ends.end() ? nullptr : &configured->second);
  if (!front_end.ok()) return WithPath(front_end.status(), path);
  return ServedModel{.name = name,
                     .source = path,
                     .format = std::string(ModelFormatName(*format)),
                     .load_time = absl::Now() - start,
                     .prepared = std::move(prepared),
                     .replicas = *std::move(replicas),
                     .aligner = aligners->empty() ? nullptr : (*aligners)[devices.front()],
                     .aligners = *std::move(aligners),
                     .front_end = std::move(front_end->pipeline),
                     .no_front_end = std::move(front_end->missing)};
}

// `device`: the device's name when the repository has several, else "".
absl::Status OverBudget(int64_t held, int64_t adding, int64_t budget, const std::string& device) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the model needs %.1f MiB but only %.1f MiB of the %.1f MiB model memory budget%s are free "
      "(replaced versions still used by live streams count until those streams end)",
      adding / 1048576.0, std::max<int64_t>(0, budget - held) / 1048576.0, budget / 1048576.0,
      device.empty() ? "" : absl::StrCat(" of ", device)));
}

// The memory each device index holds its models in: options.memory_of, or
// each its own. INVALID_ARGUMENT when it does not have one entry per device.
absl::StatusOr<std::vector<int>> MemoriesOf(const RepositoryOptions& options, size_t devices) {
  if (options.memory_of.empty()) {
    std::vector<int> own(devices);
    for (size_t d = 0; d < devices; ++d) own[d] = static_cast<int>(d);
    return own;
  }
  if (options.memory_of.size() != devices) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "memory_of names %d memories for %d devices", options.memory_of.size(), devices));
  }
  return options.memory_of;
}

// OK, or RESOURCE_EXHAUSTED when adding adding[d] to the held[d] bytes of
// each device d passes `budget` (0: none) in one memory (memory_of[d]);
// the message names that memory's first device by `names`.
absl::Status CheckBudgetPerMemory(const std::vector<int>& memory_of, const std::vector<std::string>& names,
                                  const std::vector<int64_t>& held, const std::vector<int64_t>& adding,
                                  int64_t budget) {
  if (budget <= 0) return absl::OkStatus();
  struct Memory {
    int64_t held = 0;
    int64_t adding = 0;
    int first_device = -1;
  };
  std::map<int, Memory> memories;
  for (size_t d = 0; d < memory_of.size(); ++d) {
    Memory& memory = memories[memory_of[d]];
    memory.held += held[d];
    memory.adding += adding[d];
    if (memory.first_device < 0) memory.first_device = static_cast<int>(d);
  }
  for (const auto& [id, memory] : memories) {
    if (memory.adding > 0 && memory.held + memory.adding > budget) {
      return OverBudget(memory.held, memory.adding, budget,
                        memories.size() == 1 ? "" : names[memory.first_device]);
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> NamesOf(const std::vector<ScoringBackend*>& backends) {
  std::vector<std::string> names;
  for (const ScoringBackend* backend : backends) names.push_back(backend->name());
  return names;
}

// Bytes a backend holds for `prepared`: device bytes on a GPU, host bytes on the CPU.
int64_t ResidentBytes(const PreparedModel& prepared) {
  const int64_t device = prepared.device_bytes();
  return device > 0 ? device : prepared.host_bytes();
}

// The devices `name` is placed on: its entry in `placement`, else all
// `num_devices`.
std::vector<int> DevicesOf(const std::string& name, const std::map<std::string, std::vector<int>>& placement,
                           int num_devices) {
  if (auto placed = placement.find(name); placed != placement.end()) return placed->second;
  std::vector<int> every(num_devices);
  for (int d = 0; d < num_devices; ++d) every[d] = d;
  return every;
}

// OK, or INVALID_ARGUMENT: no backend, a null one, or a placement that
// names no device, a device out of range or one twice (or not ascending).
absl::Status CheckDevices(const std::vector<ScoringBackend*>& backends,
                          const std::map<std::string, std::vector<int>>& placement) {
  if (backends.empty()) return absl::InvalidArgumentError("a model repository needs at least one backend");
  for (const ScoringBackend* backend : backends) {
    if (backend == nullptr) return absl::InvalidArgumentError("a model repository's backend is null");
  }
  for (const auto& [name, devices] : placement) {
    bool ok = !devices.empty();
    for (size_t i = 0; i < devices.size(); ++i) {
      ok = ok && devices[i] >= 0 && devices[i] < static_cast<int>(backends.size()) &&
           (i == 0 || devices[i] > devices[i - 1]);
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "model '%s' is placed on devices [%s]; a placement names at least one device, each once, "
          "in ascending order, from 0 to %d (this server has %d)",
          name, absl::StrJoin(devices, ","), backends.size() - 1, backends.size()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string AlignDictionaries::For(const std::string& name, bool* own) const {
  auto it = per_model.find(name);
  *own = it != per_model.end() && !it->second.empty();
  return *own ? it->second : default_dictionary;
}

std::shared_ptr<const PreparedModel> ServedModel::replica(int device) const {
  if (replicas.empty()) return device == 0 ? prepared : nullptr;
  return device >= 0 && device < static_cast<int>(replicas.size()) ? replicas[device] : nullptr;
}

std::shared_ptr<ModelAligner> ServedModel::aligner_on(int device) const {
  if (aligners.empty()) return device == 0 ? aligner : nullptr;
  return device >= 0 && device < static_cast<int>(aligners.size()) ? aligners[device] : nullptr;
}

std::vector<int> ServedModel::devices() const {
  if (replicas.empty()) return {0};
  std::vector<int> out;
  for (size_t d = 0; d < replicas.size(); ++d) {
    if (replicas[d] != nullptr) out.push_back(static_cast<int>(d));
  }
  return out;
}

int64_t ServedModel::resident_bytes() const {
  if (replicas.empty()) return ResidentBytes(*prepared);
  int64_t bytes = 0;
  for (const auto& replica : replicas) {
    if (replica != nullptr) bytes += ResidentBytes(*replica);
  }
  return bytes;
}

int64_t ServedModel::resident_bytes_on(int device) const {
  std::shared_ptr<const PreparedModel> on = replica(device);
  return on == nullptr ? 0 : ResidentBytes(*on);
}

ModelRepository::ModelRepository(Snapshot models, std::string directory,
                                 std::vector<ScoringBackend*> backends, const RepositoryOptions& options)
    : backends_(std::move(backends)),
      device_names_(NamesOf(backends_)),
      device_(absl::StrJoin(device_names_, ",")),
      directory_(std::move(directory)),
      budget_bytes_(options.memory_budget_bytes),
      memory_of_(*MemoriesOf(options, backends_.size())),
      placement_(options.placement),
      max_batch_frames_(options.max_batch_frames),
      warm_up_frames_(options.warm_up_frames),
      precision_(options.precision),
      align_(options.align),
      front_ends_(options.front_ends),
      models_(std::move(models)) {}

int64_t ModelRepository::MaxBatchFramesOf(const std::string& name) const {
  auto it = max_batch_frames_.find(name);
  return it == max_batch_frames_.end() ? 0 : it->second;
}

Precision ModelRepository::PrecisionOf(const std::string& name) const {
  auto it = precision_.find(name);
  return it == precision_.end() ? Precision::kExact : it->second;
}

std::vector<int> ModelRepository::PlacementOf(const std::string& name) const {
  return DevicesOf(name, placement_, num_devices());
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::Create(
    std::vector<ServedModel> models, std::vector<ScoringBackend*> backends, std::string directory,
    const RepositoryOptions& options) {
  const int64_t budget = options.memory_budget_bytes;
  if (models.empty()) return absl::InvalidArgumentError("no models to serve");
  std::vector<int64_t> bytes(backends.size(), 0);
  std::sort(models.begin(), models.end(),
            [](const ServedModel& a, const ServedModel& b) { return a.name < b.name; });
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i].name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("model from %s has an empty name", models[i].source));
    }
    if (i > 0 && models[i].name == models[i - 1].name) {
      return absl::InvalidArgumentError(
          absl::StrFormat("two models are named '%s' (%s and %s); names must be unique",
                          models[i].name, models[i - 1].source, models[i].source));
    }
    for (size_t d = 0; d < backends.size(); ++d) bytes[d] += models[i].resident_bytes_on(static_cast<int>(d));
  }
  absl::StatusOr<std::vector<int>> memory_of = MemoriesOf(options, backends.size());
  if (!memory_of.ok()) return memory_of.status();
  GMM_RETURN_IF_ERROR(CheckBudgetPerMemory(*memory_of, NamesOf(backends), std::vector<int64_t>(backends.size(), 0),
                                           bytes, budget));
  Snapshot snapshot;
  for (ServedModel& model : models) {
    if (auto it = options.max_batch_frames.find(model.name); it != options.max_batch_frames.end()) {
      model.max_batch_frames = it->second;
    }
    if (auto it = options.precision.find(model.name); it != options.precision.end()) {
      model.precision = it->second;
    }
    if (options.warm_up_frames > 0) GMM_RETURN_IF_ERROR(WarmServedModel(model, backends, options.warm_up_frames));
    snapshot.push_back(std::make_shared<const ServedModel>(std::move(model)));
  }
  return std::unique_ptr<ModelRepository>(
      new ModelRepository(std::move(snapshot), std::move(directory), std::move(backends), options));
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::LoadDirectory(
    const std::string& dir, ScoringBackend* backend, const RepositoryOptions& options) {
  return LoadDirectory(dir, std::vector<ScoringBackend*>{backend}, options);
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::LoadDirectory(
    const std::string& dir, const std::vector<ScoringBackend*>& backends,
    const RepositoryOptions& options) {
  GMM_RETURN_IF_ERROR(CheckDevices(backends, options.placement));
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrFormat("model repository %s is not a directory", dir));
  }
  std::vector<std::pair<fs::path, std::string>> files;
  std::vector<std::string> strays;  // files that are no model format at all
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = ModelNameOf(entry);
    if (name.empty()) continue;
    // A README or notes beside the models is not a reason to stop serving;
    // a file that is a model format but does not load still is, and so are
    // an empty file (a model cut short mid-copy) and one that cannot be read.
    std::error_code size_error;
    if (absl::Status format = DetectModelFormat(entry.path().string()).status();
        absl::IsInvalidArgument(format) && entry.is_regular_file(size_error) && entry.file_size(size_error) > 0 &&
        !size_error) {
      LogWarning("model repository %s: skipping %s: %s", dir, entry.path().filename().string(), format.message());
      strays.push_back(entry.path().filename().string());
      continue;
    }
    if (std::find(options.skip_at_start.begin(), options.skip_at_start.end(), name) !=
        options.skip_at_start.end()) {
      continue;
    }
    files.emplace_back(entry.path(), name);
  }
  if (error) {
    return absl::NotFoundError(absl::StrFormat("cannot list %s: %s", dir, error.message()));
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model repository %s holds no models%s", dir,
        strays.empty() ? "" : absl::StrCat(" (skipped, not a model format: ", absl::StrJoin(strays, ", "), ")")));
  }
  std::sort(files.begin(), files.end());

  absl::StatusOr<std::vector<int>> memory_of = MemoriesOf(options, backends.size());
  if (!memory_of.ok()) return memory_of.status();
  std::vector<ServedModel> models;
  for (const auto& [file, name] : files) {
    const std::vector<int> devices = DevicesOf(name, options.placement, static_cast<int>(backends.size()));
    absl::StatusOr<ServedModel> served = ReadAndPrepare(file.string(), name, backends, devices, *memory_of,
                                                        options.align, options.front_ends, nullptr);
    if (!served.ok()) return served.status();
    models.push_back(*std::move(served));
  }
  return Create(std::move(models), backends, dir, options);
}

std::set<std::string> ModelRepository::ModelNamesIn(const std::string& dir) {
  std::set<std::string> names;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = ModelNameOf(entry);
    if (!name.empty() && DetectModelFormat(entry.path().string()).ok()) names.insert(name);
  }
  return names;
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::FromModels(
    std::vector<std::pair<std::string, std::shared_ptr<const DiagGmmModel>>> models,
    ScoringBackend* backend) {
  return FromModels(std::move(models), std::vector<ScoringBackend*>{backend}, RepositoryOptions{});
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::FromModels(
    std::vector<std::pair<std::string, std::shared_ptr<const DiagGmmModel>>> models,
    const std::vector<ScoringBackend*>& backends, const RepositoryOptions& options) {
  GMM_RETURN_IF_ERROR(CheckDevices(backends, options.placement));
  std::vector<ServedModel> served;
  for (auto& [name, model] : models) {
    if (model == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("model '%s' is null", name));
    }
    const absl::Time start = absl::Now();
    const std::vector<int> devices = DevicesOf(name, options.placement, static_cast<int>(backends.size()));
    absl::StatusOr<std::vector<std::shared_ptr<const PreparedModel>>> replicas =
        PrepareReplicas(LoadedModel{.untied = std::move(model)}, backends, devices);
    if (!replicas.ok()) return WithPath(replicas.status(), name);
    std::shared_ptr<const PreparedModel> prepared = FirstReplica(*replicas);
    served.push_back({.name = name,
                      .source = "memory",
                      .format = "memory",
                      .load_time = absl::Now() - start,
                      .prepared = std::move(prepared),
                      .replicas = *std::move(replicas)});
  }
  return Create(std::move(served), backends, "", options);
}

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelRepository::Find(
    absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = std::lower_bound(
      models_.begin(), models_.end(), name,
      [](const std::shared_ptr<const ServedModel>& m, absl::string_view n) { return m->name < n; });
  if (it != models_.end() && (*it)->name == name) return *it;
  std::vector<absl::string_view> names;
  for (const auto& m : models_) names.push_back(m->name);
  constexpr size_t kMaxListed = 20;
  const bool more = names.size() > kMaxListed;
  if (more) names.resize(kMaxListed);
  return absl::NotFoundError(absl::StrFormat("no model named '%s' (this server serves: %s%s)",
                                             ClientText(name), absl::StrJoin(names, ", "),
                                             more ? ", ..." : ""));
}

std::vector<ServedModel> ModelRepository::models() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<ServedModel> out;
  out.reserve(models_.size());
  for (const auto& m : models_) out.push_back(*m);
  return out;
}

int64_t ModelRepository::RetiredBytesLocked(int device, int* versions) const {
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [](const RetiredReplica& r) { return r.replica.expired(); }),
                 retired_.end());
  int64_t bytes = 0;
  *versions = 0;
  for (const RetiredReplica& retired : retired_) {
    if (device >= 0 && retired.device != device) continue;
    if (std::shared_ptr<const PreparedModel> held = retired.replica.lock()) {
      bytes += ResidentBytes(*held);
      ++*versions;
    }
  }
  return bytes;
}

void ModelRepository::RetireLocked(const ServedModel& model) {
  for (int d : model.devices()) retired_.push_back({.device = d, .replica = model.replica(d)});
}

ModelRepository::MemoryUsage ModelRepository::MemoryOn(int device) const {
  absl::MutexLock lock(&mu_);
  MemoryUsage usage;
  for (const auto& m : models_) {
    usage.served_bytes += device < 0 ? m->resident_bytes() : m->resident_bytes_on(device);
  }
  usage.retired_bytes = RetiredBytesLocked(device, &usage.retired_versions);
  usage.budget_bytes = budget_bytes_;
  return usage;
}

ModelRepository::MemoryUsage ModelRepository::memory() const { return MemoryOn(-1); }

ModelRepository::MemoryUsage ModelRepository::memory_on(int device) const { return MemoryOn(device); }

absl::Status ModelRepository::FitsLocked(const std::vector<int64_t>& adding) const {
  if (budget_bytes_ <= 0) return absl::OkStatus();
  std::vector<int64_t> held(backends_.size(), 0);
  for (size_t d = 0; d < backends_.size(); ++d) {
    const MemoryUsage usage = MemoryOn(static_cast<int>(d));
    held[d] = usage.served_bytes + usage.retired_bytes;
  }
  return CheckBudgetPerMemory(memory_of_, device_names_, held, adding, budget_bytes_);
}

std::vector<int64_t> ModelRepository::OnEach(const std::vector<int>& devices, int64_t bytes) const {
  std::vector<int64_t> adding(backends_.size(), 0);
  for (int d : devices) adding[d] = bytes;
  return adding;
}

absl::StatusOr<ModelRepository::LoadResult> ModelRepository::Load(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is not a model name (a file name without extension, no '/', not starting "
        "with '.')",
        ClientText(name)));
  }
  if (directory_.empty()) {
    return absl::FailedPreconditionError(
        "this server's models were given in memory; there is no repository directory to load "
        "from");
  }
  absl::MutexLock load_lock(&load_mu_);
  std::error_code error;
  std::string path;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory_, error)) {
    if (ModelNameOf(entry) == name) {
      path = entry.path().string();
      break;
    }
  }
  if (path.empty()) {
    return absl::NotFoundError(absl::StrFormat("no model '%s' in the repository %s%s", ClientText(name),
                                               directory_,
                                               error ? ": " + error.message() : std::string()));
  }
  // Checked against what is held now on each device; Load and Unload are
  // serialised, so only releases (which make room) happen meanwhile.
  const std::vector<int> devices = PlacementOf(name);
  auto fits = [&](int64_t adding) ABSL_NO_THREAD_SAFETY_ANALYSIS { return FitsLocked(OnEach(devices, adding)); };
  absl::StatusOr<ServedModel> served =
      ReadAndPrepare(path, name, backends_, devices, memory_of_, align_, front_ends_, fits);
  if (!served.ok()) return served.status();
  // The backends' real sizes may differ from the host estimate.
  std::vector<int64_t> resident(backends_.size(), 0);
  for (int d : devices) resident[d] = served->resident_bytes_on(d);
  if (absl::Status status = FitsLocked(resident); !status.ok()) return WithPath(status, path);

  served->max_batch_frames = MaxBatchFramesOf(name);
  served->precision = PrecisionOf(name);
  // Before it is served: its first batches would otherwise grow the lanes under load.
  if (warm_up_frames_ > 0) GMM_RETURN_IF_ERROR(WarmServedModel(*served, backends_, warm_up_frames_));

  LoadResult result;
  absl::MutexLock lock(&mu_);
  auto it = std::lower_bound(
      models_.begin(), models_.end(), name,
      [](const std::shared_ptr<const ServedModel>& m, const std::string& n) { return m->name < n; });
  if (it != models_.end() && (*it)->name == name) {
    served->version = (*it)->version + 1;
    RetireLocked(**it);
    result.replaced = true;
    result.model = std::make_shared<const ServedModel>(*std::move(served));
    *it = result.model;
  } else {
    result.model = std::make_shared<const ServedModel>(*std::move(served));
    models_.insert(it, result.model);
  }
  return result;
}

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelRepository::PrepareAdapted(
    const ServedModel& base, std::shared_ptr<const DiagGmmModel> model, std::string label, int device) {
  if (model == nullptr) return absl::InvalidArgumentError("no adapted model");
  if (device < 0 || device >= num_devices() || base.replica(device) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' has no replica on device %d to adapt", base.name, device));
  }
  absl::MutexLock load_lock(&load_mu_);  // budget checks see one change at a time
  // One replica, where the stream scores: an adaptation is one stream's.
  const std::vector<int> devices = {device};
  GMM_RETURN_IF_ERROR(FitsLocked(OnEach(devices, model->ByteSize())));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::shared_ptr<const PreparedModel>>> replicas =
      PrepareReplicas(LoadedModel{.untied = std::move(model)}, backends_, devices);
  if (!replicas.ok()) return replicas.status();
  auto served = std::make_shared<ServedModel>();
  served->name = std::move(label);
  served->source = "adaptation";
  served->format = "memory";
  served->load_time = absl::Now() - start;
  served->prepared = FirstReplica(*replicas);
  served->replicas = *std::move(replicas);
  served->max_batch_frames = base.max_batch_frames;
  served->precision = base.precision;
  absl::MutexLock lock(&mu_);
  RetireLocked(*served);  // counted while held
  return std::shared_ptr<const ServedModel>(std::move(served));
}

absl::Status ModelRepository::Publish(const std::string& name,
                                      std::shared_ptr<const ServedModel> model) {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is not a model name (no '/', not empty, not starting with '.')", ClientText(name)));
  }
  if (model == nullptr || model->source != "adaptation") {
    return absl::InvalidArgumentError("only adapted models are published");
  }
  absl::MutexLock load_lock(&load_mu_);
  absl::MutexLock lock(&mu_);
  auto it = std::lower_bound(
      models_.begin(), models_.end(), name,
      [](const std::shared_ptr<const ServedModel>& m, const std::string& n) { return m->name < n; });
  const bool replacing = it != models_.end() && (*it)->name == name;
  if (replacing && (*it)->source != "adaptation") {
    return absl::FailedPreconditionError(absl::StrFormat(
        "'%s' is a model loaded from %s; an adaptation cannot replace it (choose another save_as)",
        ClientText(name), (*it)->source));
  }
  auto published = std::make_shared<ServedModel>(*model);
  published->name = name;
  published->usage = std::make_shared<ModelUsage>();  // its own counts under the new name
  // Served now: counted as served, no longer as retired.
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [&](const RetiredReplica& r) {
                                  const std::shared_ptr<const PreparedModel> held = r.replica.lock();
                                  return held != nullptr && held == published->replica(r.device);
                                }),
                 retired_.end());
  if (replacing) {
    if ((*it)->prepared != published->prepared) RetireLocked(**it);
    published->version = (*it)->version + 1;
    *it = std::move(published);
  } else {
    models_.insert(it, std::move(published));
  }
  return absl::OkStatus();
}

absl::Status ModelRepository::Unload(const std::string& name) {
  absl::MutexLock load_lock(&load_mu_);
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(models_.begin(), models_.end(),
                         [&](const auto& m) { return m->name == name; });
  if (it == models_.end()) {
    return absl::NotFoundError(absl::StrFormat("no model named '%s' is served", ClientText(name)));
  }
  if (models_.size() == 1) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "'%s' is the last model served; load another before unloading it", name));
  }
  RetireLocked(**it);
  models_.erase(it);
  return absl::OkStatus();
}

}  // namespace gmmscore
