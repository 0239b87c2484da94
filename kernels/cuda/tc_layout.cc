#include "kernels/cuda/tc_layout.h"

#include <algorithm>
#include <cstring>

#include "kernels/cuda/fused_layout.h"

namespace gmmscore {

float RoundToTf32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits = (bits + 0x1000u) & ~0x1FFFu;  // magnitude + half an ulp, truncated
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

TensorCoreLayout BuildTensorCoreLayout(const DiagGmmModel& model) {
  TensorCoreLayout layout;
  const int param_cols = model.param_cols();
  layout.cols = (param_cols + 7) / 8 * 8;
  int64_t rows = 0;
  for (int s = 0; s < model.num_states(); ++s) {
    const int groups = (model.num_gaussians_in_state(s) + TensorCoreLayout::kRowGroup - 1) /
                       TensorCoreLayout::kRowGroup;
    layout.row_group_state.insert(layout.row_group_state.end(), groups, s);
    rows += static_cast<int64_t>(groups) * TensorCoreLayout::kRowGroup;
  }
  layout.rows = rows;
  layout.row_gaussian.assign(rows, -1);
  std::vector<float> params((rows + TensorCoreLayout::kChunkRows) * layout.cols, 0.0f);

  int64_t row = 0;
  for (int s = 0; s < model.num_states(); ++s) {
    const int64_t first = model.state_offsets()[s];
    const int count = model.num_gaussians_in_state(s);
    const int padded = (count + TensorCoreLayout::kRowGroup - 1) / TensorCoreLayout::kRowGroup *
                       TensorCoreLayout::kRowGroup;
    for (int g = 0; g < padded; ++g, ++row) {
      float* out = &params[row * layout.cols];
      if (g < count) {
        layout.row_gaussian[row] = first + g;
        const float* in = model.params().row(first + g);
        std::copy(in, in + param_cols, out);
      } else {
        out[0] = kPaddingGconst;
      }
    }
  }

  layout.big.resize(params.size());
  layout.small.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    layout.big[i] = RoundToTf32(params[i]);
    layout.small[i] = RoundToTf32(params[i] - layout.big[i]);
  }

  // Ranges of whole states, closed once they reach kRangeRows rows.
  const int range_groups = TensorCoreLayout::kRangeRows / TensorCoreLayout::kRowGroup;
  layout.range_begin.push_back(0);
  const int total_groups = static_cast<int>(layout.row_group_state.size());
  for (int g = 0; g < total_groups; ++g) {
    const bool state_ends = g + 1 == total_groups || layout.row_group_state[g + 1] != layout.row_group_state[g];
    if (state_ends && (g + 1 - layout.range_begin.back() >= range_groups || g + 1 == total_groups)) {
      layout.range_begin.push_back(g + 1);
    }
  }
  return layout;
}

}  // namespace gmmscore
