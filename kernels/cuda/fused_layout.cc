#include "kernels/cuda/fused_layout.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gmmscore {

int64_t FusedLayout::padded_gaussians() const {
  int64_t total = 0;
  for (int32_t g : block_gaussians) total += static_cast<int64_t>(g) * states_per_block;
  return total;
}

FusedLayout BuildFusedLayout(const DiagGmmModel& model, int states_per_block) {
  const int num_states = model.num_states();
  const int dim = model.dim();
  std::vector<int> order(num_states);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return model.num_gaussians_in_state(a) > model.num_gaussians_in_state(b);
  });

  FusedLayout layout;
  layout.states_per_block = states_per_block;
  layout.dim = dim;
  layout.dim4 = (dim + 3) / 4;
  layout.num_blocks = (num_states + states_per_block - 1) / states_per_block;
  layout.slot_state.assign(static_cast<size_t>(layout.num_blocks) * states_per_block, -1);

  int64_t ab_size = 0, gconst_size = 0;
  for (int b = 0; b < layout.num_blocks; ++b) {
    const int first_state = order[b * states_per_block];  // the block's largest
    const int gaussians = model.num_gaussians_in_state(first_state);
    layout.block_gaussians.push_back(gaussians);
    layout.block_ab_offset.push_back(ab_size);
    layout.block_gconst_offset.push_back(gconst_size);
    ab_size += static_cast<int64_t>(gaussians) * layout.dim4 * 2 * states_per_block;
    gconst_size += static_cast<int64_t>(gaussians) * states_per_block;
  }
  layout.ab.assign(ab_size, Float4{0, 0, 0, 0});
  layout.gconsts.assign(gconst_size, kPaddingGconst);

  for (int slot = 0; slot < num_states; ++slot) {
    const int state = order[slot];
    const int b = slot / states_per_block;
    const int lane = slot % states_per_block;
    layout.slot_state[slot] = state;
    const int64_t first = model.state_offsets()[state];
    for (int g = 0; g < model.num_gaussians_in_state(state); ++g) {
      const float* u = model.means_invvars(first + g);
      const float* v = model.half_neg_inv_vars(first + g);
      double gconst = model.gconst(first + g);
      for (int d = 0; d < dim; ++d) {
        const double root = std::sqrt(-static_cast<double>(v[d]));
        gconst -= static_cast<double>(u[d]) * u[d] / (4.0 * v[d]);
        const int q = d / 4;
        const int64_t base = layout.block_ab_offset[b] +
                             ((static_cast<int64_t>(g) * layout.dim4 + q) * 2) * states_per_block + lane;
        (&layout.ab[base].x)[d % 4] = static_cast<float>(root);
        (&layout.ab[base + states_per_block].x)[BComponent(d % 4)] = static_cast<float>(-u[d] / (2.0 * root));
      }
      layout.gconsts[layout.block_gconst_offset[b] + static_cast<int64_t>(g) * states_per_block + lane] =
          static_cast<float>(gconst);
    }
  }
  return layout;
}

}  // namespace gmmscore
