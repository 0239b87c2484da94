#include "kernels/io/sphinx_model_writer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

absl::Status CheckParts(const SphinxModelFiles& f) {
  if (!f.gmm) return absl::OkStatus();
  const SphinxGaussianFile& m = f.means;
  const SphinxGaussianFile& v = f.variances;
  if (m.num_codebooks != v.num_codebooks || m.num_streams != v.num_streams || m.num_densities != v.num_densities ||
      m.stream_dims != v.stream_dims || m.values.size() != v.values.size()) {
    return absl::InvalidArgumentError("means and variances differ in shape");
  }
  int64_t per_density = 0;
  for (int d : m.stream_dims) per_density += d;
  if (static_cast<int64_t>(m.values.size()) != int64_t{m.num_codebooks} * m.num_densities * per_density) {
    return absl::InvalidArgumentError(absl::StrCat("means hold ", m.values.size(), " values, the header needs ",
                                                   int64_t{m.num_codebooks} * m.num_densities * per_density));
  }
  if (static_cast<int64_t>(f.mixture_weights.size()) != int64_t{f.num_senones} * m.num_streams * m.num_densities) {
    return absl::InvalidArgumentError(absl::StrCat(f.mixture_weights.size(), " mixture weights for ", f.num_senones,
                                                   " senones x ", m.num_streams, " streams x ", m.num_densities,
                                                   " densities"));
  }
  return absl::OkStatus();
}

absl::Status CheckTransitions(const SphinxModelFiles& f) {
  if (static_cast<int64_t>(f.transitions.probs.size()) !=
      int64_t{f.transitions.num_tmats} * f.transitions.num_emit * (f.transitions.num_emit + 1)) {
    return absl::InvalidArgumentError("transition matrices of the wrong size");
  }
  return absl::OkStatus();
}

absl::Status WriteAtomically(const std::filesystem::path& path, const std::string& bytes) {
  const std::filesystem::path temp = path.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", temp.string()));
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) return absl::UnavailableError(absl::StrCat("cannot rename ", temp.string(), ": ", error.message()));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteSphinxModelDirectory(const SphinxModelFiles& files, const std::string& source_dir,
                                       const std::string& output_dir) {
  GMM_RETURN_IF_ERROR(CheckParts(files));
  GMM_RETURN_IF_ERROR(CheckTransitions(files));
  std::error_code error;
  std::filesystem::create_directories(output_dir, error);
  if (error) return absl::UnavailableError(absl::StrCat("cannot create ", output_dir, ": ", error.message()));
  std::set<std::string> parameters = {"transition_matrices"};
  if (files.gmm) parameters.insert({"means", "variances", "mixture_weights", "sendump"});
  for (const auto& entry : std::filesystem::directory_iterator(source_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || parameters.count(name)) continue;
    const std::filesystem::path to = std::filesystem::path(output_dir) / name;
    if (std::filesystem::equivalent(entry.path(), to, error)) continue;
    std::filesystem::copy_file(entry.path(), to, std::filesystem::copy_options::overwrite_existing, error);
    if (error) return absl::UnavailableError(absl::StrCat("cannot copy ", entry.path().string(), ": ", error.message()));
  }
  if (error) return absl::UnavailableError(absl::StrCat("cannot read ", source_dir, ": ", error.message()));
  const std::filesystem::path out(output_dir);
  if (files.gmm) {
    GMM_RETURN_IF_ERROR(WriteAtomically(out / "means", EncodeSphinxGaussianFile(files.means)));
    GMM_RETURN_IF_ERROR(WriteAtomically(out / "variances", EncodeSphinxGaussianFile(files.variances)));
    GMM_RETURN_IF_ERROR(WriteAtomically(out / "mixture_weights",
                                        EncodeSphinxMixtureWeights(files.num_senones, files.means.num_streams,
                                                                   files.means.num_densities, files.mixture_weights)));
  }
  GMM_RETURN_IF_ERROR(WriteAtomically(out / "transition_matrices", EncodeSphinxTransitions(files.transitions)));
  return absl::OkStatus();
}

}  // namespace gmmscore
