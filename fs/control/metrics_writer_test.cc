// MetricsWriter::Render: a mountpoint of any bytes becomes a label value of valid UTF-8 on one
// line.
#include "fs/control/metrics_writer.h"

#include <gtest/gtest.h>

#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

TEST(MetricsWriterTest, MountpointLabelIsEscaped) {
  const nlohmann::json status = {{"opens", 3}, {"staging", {{"queued", 1}}}};
  const std::string text = MetricsWriter::Render(status, "/mnt/a\xff\nb\\c\"d");
  EXPECT_TRUE(IsValidUtf8(text)) << text;
  EXPECT_NE(
      text.find("clairfs_opens_total{mountpoint=\"/mnt/a\\\\xff\\\\x0ab\\\\\\\\c\\\"d\"} 3\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("clairfs_staging_queued{"), std::string::npos) << text;
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 4u) << text;  // TYPE and sample for each metric
}

}  // namespace
}  // namespace clairfs
