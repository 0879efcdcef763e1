// A control reply written as text (see reply_writer.h).
#include "fs/control/reply_writer.h"

#include "fs/control/control_server.h"

namespace clairfs {

void ReplyWriter::Key(std::string_view key) {
  if (in_array_) EndArray();
  if (text_.size() > 1) text_ += ',';
  text_ += DumpReply(nlohmann::json(key));
  text_ += ':';
}

void ReplyWriter::Add(std::string_view key, const nlohmann::json& value) {
  Key(key);
  text_ += DumpReply(value);
}

void ReplyWriter::BeginArray(std::string_view key) {
  Key(key);
  text_ += '[';
  in_array_ = true;
  elements_ = 0;
}

void ReplyWriter::Append(const nlohmann::json& element) {
  if (elements_ > 0) text_ += ',';
  text_ += DumpReply(element);
  ++elements_;
}

void ReplyWriter::EndArray() {
  if (!in_array_) return;
  text_ += ']';
  in_array_ = false;
}

std::string ReplyWriter::Finish() {
  if (in_array_) EndArray();
  if (text_.size() > 1) text_ += ',';
  text_ += "\"ok\":true}\n";
  return std::move(text_);
}

}  // namespace clairfs
