// matmul invariants: each output equals one quant::dot of its weight row and activation row, so
// a row's result is bit-identical for any batch size (1..9) and thread count (1, 2); plus the
// expert slicing and activation batching helpers.
#include "engine/kernels/matmul.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/quant/quant.hpp"

namespace ds4::kernels {
namespace {

using quant::Type;

constexpr int64_t kCols = 512;
constexpr int64_t kRows = 37;  // odd, so chunks split unevenly

std::vector<uint8_t> make_weights(Type type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 0.5f);
  std::vector<float> x(static_cast<size_t>(cols));
  const size_t rb = quant::row_bytes(type, static_cast<uint64_t>(cols));
  std::vector<uint8_t> w(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; r++) {
    for (float& v : x) v = nd(rng);
    quant::traits(type).quantize(x.data(), w.data() + static_cast<size_t>(r) * rb, cols);
  }
  return w;
}

class MatmulInvarianceTest : public ::testing::TestWithParam<Type> {};

TEST_P(MatmulInvarianceTest, RowResultIndependentOfBatchAndThreads) {
  const Type type = GetParam();
  std::mt19937 rng(7);
  const std::vector<uint8_t> w = make_weights(type, kRows, kCols, rng);
  const WeightView view{type, w.data(), kRows, kCols};
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(9 * kCols);
  for (float& v : x) v = nd(rng);
  const Type vdt = quant::traits(type).vec_dot_type;
  std::vector<uint8_t> act;
  quantize_activations(vdt, x.data(), 9, kCols, act);
  const size_t arb = quant::act_row_bytes(vdt, kCols);
  ASSERT_EQ(act.size(), 9 * arb);

  const std::vector<quant::Isa> isas = quant::supported_isas();
  ThreadPool one(1), two(2);
  for (quant::Isa isa : isas) {
    // Reference: a direct dot per element.
    std::vector<float> ref(9 * kRows);
    for (int t = 0; t < 9; t++)
      for (int64_t r = 0; r < kRows; r++)
        ref[t * kRows + r] = quant::dot(type, w.data() + r * weight_row_bytes(view), act.data() + t * arb, kCols, isa);
    for (ThreadPool* pool : {&one, &two}) {
      for (int n = 1; n <= 9; n++) {
        for (int start = 0; start + n <= 9; start += 4) {  // also batches that start mid-way
          std::vector<float> out(static_cast<size_t>(n) * kRows, -1.0f);
          matmul(*pool, view, act.data() + start * arb, arb, n, out.data(), isa);
          ASSERT_EQ(std::memcmp(out.data(), ref.data() + start * kRows, out.size() * 4), 0)
              << quant::isa_name(isa) << " threads " << pool->size() << " n " << n << " start " << start;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatmulInvarianceTest,
                         ::testing::Values(Type::F32, Type::F16, Type::BF16, Type::Q8_0, Type::Q2_K, Type::Q4_K,
                                           Type::IQ2_XXS, Type::MXFP4),
                         [](const auto& info) { return std::string(quant::type_info(info.param).name); });

TEST(Matmul, LargeMatrixUsesPoolAndStaysInvariant) {
  std::mt19937 rng(11);
  const int64_t rows = 700, cols = 1024;  // big enough to go through the pool
  const std::vector<uint8_t> w = make_weights(Type::Q8_0, rows, cols, rng);
  std::vector<float> x(3 * cols);
  std::normal_distribution<float> nd;
  for (float& v : x) v = nd(rng);
  ThreadPool one(1), two(2);
  const WeightView view{Type::Q8_0, w.data(), rows, cols};
  std::vector<float> a(3 * rows), b(3 * rows), c(rows);
  matmul_f32(one, view, x.data(), 3, a.data(), quant::best_isa());
  matmul_f32(two, view, x.data(), 3, b.data(), quant::best_isa());
  matmul_f32(two, view, x.data() + cols, 1, c.data(), quant::best_isa());
  EXPECT_EQ(a, b);
  EXPECT_EQ(0, std::memcmp(c.data(), a.data() + rows, rows * 4));
}

TEST(Matmul, SplitByMinimumTaskSizeKeepsBitsForAnyThreadCount) {
  // Row counts around the pool's grain (ThreadPool::kMinTaskBytes of weight rows per task), so
  // some calls run inline, some in two chunks, some in many; every thread count gives the bits
  // of one thread.
  std::mt19937 rng(13);
  const int64_t cols = 1024, max_rows = 200;
  const std::vector<uint8_t> w = make_weights(Type::Q8_0, max_rows, cols, rng);
  std::vector<float> x(4 * cols);
  std::normal_distribution<float> nd;
  for (float& v : x) v = nd(rng);
  ThreadPool one(1), two(2), three(3), five(5);
  for (int64_t rows : {20, 31, 60, 61, 62, 130, 200})
    for (int n : {1, 2, 4}) {
      const WeightView view{Type::Q8_0, w.data(), rows, cols};
      std::vector<float> ref(static_cast<size_t>(n * rows));
      matmul_f32(one, view, x.data(), n, ref.data(), quant::best_isa());
      for (ThreadPool* pool : {&two, &three, &five}) {
        std::vector<float> out(ref.size(), -1.0f);
        matmul_f32(*pool, view, x.data(), n, out.data(), quant::best_isa());
        ASSERT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * 4))
            << "rows " << rows << " n " << n << " threads " << pool->size();
      }
    }
}

TEST(Matmul, RejectsShortActivationRowsAndActivationOnlyTypes) {
  ThreadPool pool(1);
  std::vector<uint8_t> w(quant::row_bytes(Type::Q8_0, 64) * 2), act(64);
  EXPECT_THROW(matmul(pool, {Type::Q8_0, w.data(), 2, 64}, act.data(), act.size(), 1, nullptr, quant::Isa::Scalar),
               std::invalid_argument);
  EXPECT_THROW(matmul(pool, {Type::Q8_K, w.data(), 1, 256}, act.data(), 4096, 1, nullptr, quant::Isa::Scalar),
               std::invalid_argument);
}

TEST(ExpertView, SlicesExpertMajorTensor) {
  std::vector<uint8_t> base(3 * 4 * 84);
  const WeightView v = expert_view(Type::Q2_K, base.data(), 4, 256, 3, 2);
  EXPECT_EQ(static_cast<const uint8_t*>(v.data), base.data() + 2 * 4 * 84);
  EXPECT_EQ(v.rows, 4);
  EXPECT_EQ(v.cols, 256);
  EXPECT_THROW(expert_view(Type::Q2_K, base.data(), 4, 256, 3, 3), std::out_of_range);
}

}  // namespace
}  // namespace ds4::kernels
