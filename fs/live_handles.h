// LiveHandles: the handles the daemon has given the kernel (an open file's or a directory's fh),
// so that those the kernel never gives back are let go when the filesystem is.
//
// A handle belongs to the kernel from the reply to OPEN (or OPENDIR) until its RELEASE. A
// connection that ends first (a stop while a file is open, an abort, a lazy unmount) sends no
// RELEASE, and the handle's object would stay allocated and its fd open until the process exits:
// its counters never reach the file table and the Darshan log, and the leak checker reports it.
// The filesystem registers every handle it makes and, once no request thread is left, takes what
// is still registered and releases it as RELEASE would.
//
// Intrusive and striped: registering costs no allocation and one short lock of one of 16 stripes,
// so opens on many threads rarely meet. A handle leaves its list in its destructor, whichever
// path destroys it, so the list never holds a freed handle.
//
// Thread-safety: Add and a handle's destruction may run on any threads at once; TakeAll only when
// no other thread can add or destroy handles (the filesystem's destructor).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace clairfs {

template <typename T>
class LiveHandles;

// The base of a handle type T: its links in a LiveHandles<T>.
template <typename T>
class LiveHandle {
 public:
  LiveHandle() = default;
  LiveHandle(const LiveHandle&) = delete;
  LiveHandle& operator=(const LiveHandle&) = delete;
  ~LiveHandle() {
    if (registry_ != nullptr) registry_->Remove(this);
  }

 private:
  friend class LiveHandles<T>;
  LiveHandles<T>* registry_ = nullptr;
  LiveHandle* prev_ = nullptr;
  LiveHandle* next_ = nullptr;
  size_t stripe_ = 0;
};

template <typename T>
class LiveHandles {
 public:
  LiveHandles() = default;
  LiveHandles(const LiveHandles&) = delete;
  LiveHandles& operator=(const LiveHandles&) = delete;
  // Handles still registered forget this registry (their owner let them go already or never
  // will): none may point at it once it is gone.
  ~LiveHandles() { (void)TakeAll(); }

  // Registers `handle`, which is in no registry.
  void Add(T* handle) {
    LiveHandle<T>* h = handle;
    h->stripe_ = (reinterpret_cast<uintptr_t>(h) >> 6) % kStripes;
    Stripe& s = stripes_[h->stripe_];
    std::lock_guard<std::mutex> lock(s.mu);
    h->registry_ = this;
    h->prev_ = nullptr;
    h->next_ = s.head;
    if (s.head != nullptr) s.head->prev_ = h;
    s.head = h;
    ++s.count;
  }

  // Every registered handle, unregistered: the caller owns them now.
  std::vector<T*> TakeAll() {
    std::vector<T*> taken;
    for (Stripe& s : stripes_) {
      std::lock_guard<std::mutex> lock(s.mu);
      for (LiveHandle<T>* h = s.head; h != nullptr;) {
        LiveHandle<T>* next = h->next_;
        h->registry_ = nullptr;
        h->prev_ = h->next_ = nullptr;
        taken.push_back(static_cast<T*>(h));
        h = next;
      }
      s.head = nullptr;
      s.count = 0;
    }
    return taken;
  }

  // How many handles are registered (a moment's figure).
  size_t size() {
    size_t n = 0;
    for (Stripe& s : stripes_) {
      std::lock_guard<std::mutex> lock(s.mu);
      n += s.count;
    }
    return n;
  }

 private:
  friend class LiveHandle<T>;
  static constexpr size_t kStripes = 16;
  struct Stripe {
    std::mutex mu;
    LiveHandle<T>* head = nullptr;
    size_t count = 0;
  };

  // Unlinks `h` (from its destructor: only the links are touched, T's members are gone).
  void Remove(LiveHandle<T>* h) {
    Stripe& s = stripes_[h->stripe_];
    std::lock_guard<std::mutex> lock(s.mu);
    if (h->prev_ != nullptr) {
      h->prev_->next_ = h->next_;
    } else {
      s.head = h->next_;
    }
    if (h->next_ != nullptr) h->next_->prev_ = h->prev_;
    h->registry_ = nullptr;
    --s.count;
  }

  std::array<Stripe, kStripes> stripes_;
};

}  // namespace clairfs
