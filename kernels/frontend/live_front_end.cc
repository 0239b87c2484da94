#include "kernels/frontend/live_front_end.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/sphinx_features.h"

namespace gmmscore {
namespace {

// Rows [first, first + count) of `m`, copied.
FloatMatrix CopyRows(const FloatMatrix& m, int64_t first, int64_t count) {
  FloatMatrix out(count, m.cols());
  if (count > 0) std::copy(m.row(first), m.row(first) + count * m.cols(), out.data());
  return out;
}

// `top` with `bottom`'s rows after it.
FloatMatrix Append(const FloatMatrix& top, const FloatMatrix& bottom) {
  FloatMatrix out(top.rows() + bottom.rows(), bottom.cols());
  std::copy(top.span().begin(), top.span().end(), out.data());
  std::copy(bottom.span().begin(), bottom.span().end(), out.row(top.rows()));
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LiveFrontEnd>> LiveFrontEnd::Create(const FeaturePipeline& pipeline) {
  const int dim = SphinxFeatureDim(pipeline.feature_type, pipeline.front_end.num_cepstra);
  const int context = SphinxFeatureContext(pipeline.feature_type);
  if (dim == 0 || context < 0) {
    return absl::UnimplementedError(absl::StrCat("-feat ", pipeline.feature_type,
                                                 " is not supported (1s_c, 1s_c_d, 1s_c_d_dd or s2_4x)"));
  }
  if (pipeline.cmn != CmnMode::kNone &&
      static_cast<int>(pipeline.cmn_init.size()) != pipeline.front_end.num_cepstra) {
    return absl::InvalidArgumentError(absl::StrCat("-cmninit has ", pipeline.cmn_init.size(),
                                                   " values for ", pipeline.front_end.num_cepstra, " cepstra"));
  }
  GMM_ASSIGN_OR_RETURN(CepstraStream cepstra, CepstraStream::Create(pipeline.front_end));
  return std::unique_ptr<LiveFrontEnd>(new LiveFrontEnd(pipeline, std::move(cepstra), dim, context));
}

LiveFrontEnd::LiveFrontEnd(FeaturePipeline pipeline, CepstraStream cepstra, int dim, int context)
    : pipeline_(std::move(pipeline)),
      cepstra_(std::move(cepstra)),
      dim_(dim),
      context_(context),
      kept_(0, pipeline_.front_end.num_cepstra) {
  if (pipeline_.cmn != CmnMode::kNone) cmn_.emplace(pipeline_.cmn_init);
}

absl::StatusOr<FloatMatrix> LiveFrontEnd::Push(absl::Span<const int16_t> samples) {
  if (finished_) return absl::FailedPreconditionError("the live front end has finished");
  GMM_ASSIGN_OR_RETURN(FloatMatrix cepstra, cepstra_.Process(samples));
  return Take(std::move(cepstra), /*at_end=*/false);
}

absl::StatusOr<FloatMatrix> LiveFrontEnd::Finish() {
  if (finished_) return absl::FailedPreconditionError("the live front end has finished");
  finished_ = true;
  GMM_ASSIGN_OR_RETURN(FloatMatrix last, cepstra_.End());
  return Take(std::move(last), /*at_end=*/true);
}

absl::StatusOr<FloatMatrix> LiveFrontEnd::Take(FloatMatrix cepstra, bool at_end) {
  if (cmn_.has_value()) {
    for (int64_t t = 0; t < cepstra.rows(); ++t) cmn_->Apply(absl::MakeSpan(cepstra.row(t), cepstra.cols()));
  }
  if (cepstra.rows() > 0) kept_ = Append(kept_, cepstra);
  frames_in_ += cepstra.rows();
  const int64_t end = at_end ? frames_in_ : std::max(frames_out_, frames_in_ - context_);
  if (end == frames_out_) return FloatMatrix(0, dim_);
  // The window the new frames read: their context on the left (or the
  // start, which ComputeSphinxFeatures pads as sphinxbase does), and on the
  // right everything so far (at the end, padded the same way).
  const int64_t first = std::max<int64_t>(0, frames_out_ - context_);
  const FloatMatrix window = CopyRows(kept_, first - kept_first_, frames_in_ - first);
  GMM_ASSIGN_OR_RETURN(const FloatMatrix features, ComputeSphinxFeatures(window, pipeline_.feature_type));
  FloatMatrix out = CopyRows(features, frames_out_ - first, end - frames_out_);
  frames_out_ = end;
  const int64_t keep_from = std::max<int64_t>(0, frames_out_ - context_);
  kept_ = CopyRows(kept_, keep_from - kept_first_, frames_in_ - keep_from);
  kept_first_ = keep_from;
  return out;
}

}  // namespace gmmscore
