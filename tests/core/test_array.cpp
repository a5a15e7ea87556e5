// Arrays: creation, element access, printing.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

namespace kiln {

TEST(Array, CreationAndAccess) {
  Array x = array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  EXPECT_EQ(x.dtype(), f32);
  EXPECT_EQ(x.shape(), (Shape{2, 2}));
  EXPECT_EQ(x.ndim(), 2);
  EXPECT_EQ(x.size(), 4);
  EXPECT_FALSE(x.is_tracer());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(scalar(7).item<int32_t>(), 7);
  EXPECT_EQ(scalar(2.5).dtype(), f64);
  EXPECT_THROW(x.item<float>(), Error);
}

TEST(Array, WeakTypedNumbersKeepTheArrayDtype) {
  Array x = array({1.0f, 2.0f});
  EXPECT_EQ((x * 2.0).dtype(), f32);
  EXPECT_EQ((2 * x).dtype(), f32);
  Array i = array({1, 2});
  EXPECT_EQ((i + 1).dtype(), i32);
  EXPECT_EQ((i + 1.5).dtype(), f32);
  EXPECT_EQ((i + 1.5).to_vector<float>(), (std::vector<float>{2.5f, 3.5f}));
}

TEST(Array, Printing) {
  std::ostringstream out;
  out << array({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(out.str(), "array([[1, 2], [3, 4]], i32[2,2])");
}

}  // namespace kiln
