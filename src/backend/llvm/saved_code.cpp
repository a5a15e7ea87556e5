// Object tables of saved executables (see the header).
#include "backend/llvm/saved_code.h"

namespace kiln::llvm_backend {

uint32_t ObjectTable::index(const std::shared_ptr<const ObjectCode>& object) {
  if (!object) throw SavedCodeMismatch("a kernel has no object file");
  auto [found, fresh] = numbers_.emplace(object.get(), static_cast<uint32_t>(objects_.size()));
  if (fresh) objects_.push_back(object);
  return found->second;
}

void ObjectTable::write(detail::ByteWriter& out) const {
  out.add(static_cast<uint32_t>(objects_.size()));
  for (const auto& object : objects_) {
    out.add_string(object->bytes);
    out.add(static_cast<uint32_t>(object->symbols.size()));
    for (const std::string& symbol : object->symbols) out.add_string(symbol);
  }
}

LinkedObjects::LinkedObjects(detail::ByteReader& in) {
  auto count = in.read<uint32_t>();
  for (uint32_t k = 0; k < count; ++k) {
    auto object = std::make_shared<ObjectCode>();
    object->bytes = in.read_string();
    auto symbols = in.read<uint32_t>();
    for (uint32_t s = 0; s < symbols; ++s) object->symbols.emplace_back(in.read_string());
    objects_.push_back(std::move(object));
  }
  linked_.resize(objects_.size());
}

const std::shared_ptr<const ObjectCode>& LinkedObjects::object(uint32_t index) const {
  if (index >= objects_.size()) throw SavedCodeMismatch("an object index out of range");
  return objects_[index];
}

std::pair<void*, std::shared_ptr<const void>> LinkedObjects::address(uint32_t index, uint32_t symbol) {
  object(index);
  if (symbol >= objects_[index]->symbols.size()) throw SavedCodeMismatch("a symbol index out of range");
  if (!linked_[index].code) linked_[index] = Engine::instance().load(objects_[index]);
  return {linked_[index].addresses[symbol], linked_[index].code};
}

}  // namespace kiln::llvm_backend
