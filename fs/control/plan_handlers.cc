// plan_set / plan_clear control ops (see plan_handlers.h).
#include "fs/control/plan_handlers.h"

#include <optional>

#include "fs/control/status_report.h"
#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

Result<std::string> StringField(const nlohmann::json& request, const char* key,
                                const std::string& fallback) {
  if (!request.contains(key)) return fallback;
  if (!request[key].is_string()) return Status::Invalid(std::string(key) + " must be a string");
  return request[key].get<std::string>();
}

}  // namespace

void RegisterPlanHandlers(ControlServer* server, PlanRuntime* runtime) {
  server->AddHandler(
      "plan_set", ControlAccess::kOwner, {"spec", "layout", "layout_root", "window", "uid"},
      [runtime](const nlohmann::json& request, const PeerCredentials&, nlohmann::json* reply) {
        auto spec = StringField(request, "spec", "");
        if (!spec.ok()) return spec.status();
        if (spec->empty()) return Status::Invalid("plan_set needs a spec");
        auto layout = StringField(request, "layout", "imagefolder");
        if (!layout.ok()) return layout.status();
        auto root_text = StringField(request, "layout_root", "");
        if (!root_text.ok()) return root_text.status();
        auto root = UnescapeName(*root_text);  // a directory name of the dataset: escaped
        if (!root.ok()) return root.status();
        std::optional<uint64_t> window;
        if (request.contains("window")) {
          if (!request["window"].is_number_unsigned() || request["window"].get<uint64_t>() == 0) {
            return Status::Invalid("window must be a positive integer");
          }
          window = request["window"].get<uint64_t>();
        }
        uint32_t uid = Opener::kNoUid;
        if (request.contains("uid")) {
          if (!request["uid"].is_number_unsigned() ||
              request["uid"].get<uint64_t>() >= Opener::kNoUid) {
            return Status::Invalid("uid must be a uid (an integer below 4294967295)");
          }
          uid = static_cast<uint32_t>(request["uid"].get<uint64_t>());
        }
        if (*spec == "auto") {
          auto layout_spec = ParseLayoutSpec(*layout, *root);
          if (!layout_spec.ok()) return layout_spec.status().WithContext("--layout");
          PlanWatcherConfig watch;
          watch.layout = std::move(*layout_spec);
          watch.root_given = !root->empty();
          if (window) watch.window = *window;
          watch.uid = uid;
          CLAIRFS_RETURN_IF_ERROR(runtime->SetAuto(std::move(watch)));
          (*reply)["plan"] = SanitizedStrings(runtime->StatusJson());
          return Status::Ok();
        }
        auto parsed = ParsePlanTrackerConfig(*spec, *layout, *root);
        if (!parsed.ok()) return parsed.status();
        PlanTrackerConfig config = std::move(*parsed);
        if (window) config.window = *window;
        config.uid = uid;
        CLAIRFS_RETURN_IF_ERROR(runtime->Set(config));
        (*reply)["plan"] = SanitizedStrings(runtime->StatusJson());
        return Status::Ok();
      });
  server->AddHandler("plan_clear", ControlAccess::kOwner, {},
                     [runtime](const nlohmann::json&, const PeerCredentials&, nlohmann::json*) {
                       runtime->Clear();
                       return Status::Ok();
                     });
}

}  // namespace clairfs
