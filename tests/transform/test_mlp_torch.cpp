// The MLP loss and its gradients against PyTorch (python3-torch), and the
// caching promises of value_and_grad in a training loop.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstdlib>
#include <filesystem>

#include "support/numpy_oracle.h"

namespace kiln {
namespace {

struct Mlp {
  Array w1, b1, w2, b2, w3, b3;
};

}  // namespace
}  // namespace kiln

KILN_TREE(kiln::Mlp, w1, b1, w2, b2, w3, b3);

namespace kiln {
namespace {

Array mlp_loss(const Mlp& p, const Array& x, const Array& labels) {
  Array h = relu(matmul(x, p.w1) + p.b1);
  h = relu(matmul(h, p.w2) + p.b2);
  Array logits = matmul(h, p.w3) + p.b3;
  return -mean(sum(one_hot(labels, p.w3.shape(1), p.w3.dtype()) * log_softmax(logits), -1));
}

Mlp make_params(DType dtype) {
  auto keys = random::split_keys(random::key(3), 6);
  auto normal = [&](int k, Shape shape, double scale) {
    return astype(random::normal(keys[k], shape, f64) * scale, dtype);
  };
  return {normal(0, {20, 16}, 0.3), normal(1, {16}, 0.1),    normal(2, {16, 12}, 0.3),
          normal(3, {12}, 0.1),     normal(4, {12, 5}, 0.3), normal(5, {5}, 0.1)};
}

TEST(MlpGradients, MatchPyTorch) {
  Mlp params = make_params(f64);
  Array x = random::normal(random::key(11), {32, 20}, f64);
  Array labels = random::randint(random::key(12), {32}, 0, 5);

  std::string directory = (std::filesystem::temp_directory_path() / "kiln-torch-XXXXXX").string();
  ASSERT_NE(mkdtemp(directory.data()), nullptr);
  std::map<std::string, Array> named{{"w1", params.w1}, {"b1", params.b1}, {"w2", params.w2}, {"b2", params.b2},
                                     {"w3", params.w3}, {"b3", params.b3}, {"x", x},          {"labels", labels}};
  for (const auto& [name, value] : named) save_npy(directory + "/" + name + ".npy", value);
  std::string command =
      std::string("'") + KILN_TEST_PYTHON + "' '" + KILN_TEST_SOURCE_DIR + "/oracle/torch_mlp.py' '" + directory + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  auto [loss, grads] = value_and_grad(mlp_loss)(params, x, labels);
  EXPECT_TRUE(testing::all_close(loss, load_npy(directory + "/loss.npy"), 1e-12, 1e-12, "loss"));
  std::map<std::string, Array> ours{{"w1", grads.w1}, {"b1", grads.b1}, {"w2", grads.w2},
                                    {"b2", grads.b2}, {"w3", grads.w3}, {"b3", grads.b3}};
  for (const auto& [name, gradient] : ours)
    EXPECT_TRUE(testing::all_close(gradient, load_npy(directory + "/grad_" + name + ".npy"), 1e-10, 1e-12, name));

  // The same loss jitted, and in f32, agree too.
  auto [jit_loss, jit_grads] = jit(value_and_grad(mlp_loss))(params, x, labels);
  EXPECT_TRUE(testing::all_close(jit_grads.w1, grads.w1, 1e-10, 1e-12, "jit w1"));
  Mlp params32 = tree_map([](const Array& p) { return astype(p, f32); }, params);
  auto [loss32, grads32] = value_and_grad(mlp_loss)(params32, astype(x, f32), labels);
  EXPECT_TRUE(testing::all_close(astype(grads32.w2, f64), grads.w2, 1e-3, 1e-5, "f32 w2"));
  std::filesystem::remove_all(directory);
}

TEST(MlpGradients, ValueAndGradOfACapturingLambdaCompilesOnceOverFreshBatches) {
  clear_graph_cache();
  Mlp params = make_params(f32);
  Array batch, batch_labels;
  auto loss = [&](const Mlp& p) { return mlp_loss(p, batch, batch_labels); };
  auto value_and_gradient = value_and_grad(loss);
  Array key = random::key(5);
  for (int i = 0; i < 1000; ++i) {
    auto keys = random::split_keys(key, 3);
    key = keys[0];
    batch = random::normal(keys[1], {8, 20});  // a fresh batch every call, captured by reference
    batch_labels = random::randint(keys[2], {8}, 0, 5);
    auto [value, grads] = value_and_gradient(params);
    if (i % 100 == 0) {
      // Eager reference: the vjp transform run op by op, no cache involved.
      auto [eager_value, pullback] = vjp(loss, params);
      auto [eager_grads] = pullback(scalar(1.0f));
      ASSERT_TRUE(testing::all_close(value, eager_value, 1e-5, 1e-6, "value"));
      ASSERT_TRUE(testing::all_close(grads.w1, eager_grads.w1, 1e-4, 1e-6, "w1"));
    }
  }
  EXPECT_EQ(value_and_gradient.stats().compiles, 1);
  EXPECT_EQ(value_and_gradient.stats().calls, 1000);
}

}  // namespace
}  // namespace kiln
