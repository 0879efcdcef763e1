// ReplyWriter: a control reply written as text member by member, for replies that list every
// file of a dataset (`ls -r`, `stats` with every file's counters).
//
// Built as one nlohmann::json tree, such a reply held every value as its own small allocation
// (a tree node, a key, a value: heaptrack counted 18 MB of them for the `stats` of 5,000 files)
// until it was serialised. Freed, they left the allocator's pages partly used by whatever the
// daemon allocated meanwhile, so that not even malloc_trim could return them: with `stats` of
// 5,000 files asked every 0.25 s during 300,000 opens, the daemon kept 75 MiB resident after a
// trim, with 27 MB in use. Written here, each array element is serialised as it is added and its
// tree freed at once, so a reply costs its text (one growing buffer) and one element's tree: 45
// MiB resident after the same run and a trim.
//
// Text: every value is serialised as DumpReply does (invalid UTF-8 replaced, never thrown); keys
// are the handler's own ASCII names. Finish() adds "ok": true and the newline. Members come in
// the order written (a JSON object's members have no order).
//
// Thread-safety: one writer per request, used by one thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace clairfs {

class ReplyWriter {
 public:
  ReplyWriter() = default;
  ReplyWriter(const ReplyWriter&) = delete;
  ReplyWriter& operator=(const ReplyWriter&) = delete;

  // Adds the member "key": value (not inside an array).
  void Add(std::string_view key, const nlohmann::json& value);
  // Opens the array member "key"; Append adds its elements until EndArray.
  void BeginArray(std::string_view key);
  void Append(const nlohmann::json& element);
  void EndArray();
  // Elements appended to the array opened last.
  size_t elements() const { return elements_; }
  // The reply line: the members written, "ok": true, a newline. Closes an array left open.
  std::string Finish();

 private:
  void Key(std::string_view key);

  std::string text_ = "{";
  bool in_array_ = false;
  size_t elements_ = 0;
};

}  // namespace clairfs
