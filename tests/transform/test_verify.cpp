// The IR verifier refuses broken graphs: a value used before it is defined,
// a type its node's rule disagrees with, a body that does not fit its node.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <memory>
#include <stdexcept>

#include "ir/control.h"
#include "ir/graph.h"
#include "transform/verify.h"

namespace kiln {
namespace {

TEST(Verifier, RejectsBrokenGraphs) {
  Graph graph = make_graph(
      "ok", [](const Array& v) { return exp(v) + 1; }, array({1.0f}));
  ir::Graph broken = detail::ir_of(graph);
  broken.nodes[1].inputs = {5};  // used before defined
  EXPECT_THROW(transform::verify(broken), std::logic_error);
  broken = detail::ir_of(graph);
  broken.nodes[1].type.dtype = DType::i32;  // disagrees with its rule
  EXPECT_THROW(transform::verify(broken), std::logic_error);
}

TEST(Verifier, ChecksBodiesAgainstTheirNode) {
  auto fn = [](const Array& x) {
    return while_loop([](const Array& v) { return sum(v) < 10.0f; }, [](const Array& v) { return v + 1.0f; }, x);
  };
  Graph graph = make_graph("loop", fn, zeros({2}));
  transform::verify(detail::ir_of(graph));
  ir::Graph broken = detail::ir_of(graph);
  for (ir::Node& node : broken.nodes) {
    if (!ir::is_control(node.op)) continue;
    auto body = std::make_shared<ir::Graph>(*node.bodies[1]);
    body->outputs.push_back(body->outputs[0]);  // one result too many
    node.bodies[1] = body;
  }
  EXPECT_THROW(transform::verify(broken), std::logic_error);
}

}  // namespace
}  // namespace kiln
