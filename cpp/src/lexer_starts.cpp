// Native lexer start states; see lexer_starts.hpp.
#include "tokamata/lexer_starts.hpp"

#include <stdexcept>
#include <string>

namespace tokamata {

GrammarCore::StartFn native_starts(std::shared_ptr<DerivativeDfa> lexer, RegexCore* core,
                                   std::shared_ptr<EarleyCore> parser, std::vector<int32_t> terminals,
                                   const std::vector<uint8_t>& ignored) {
  if (terminals.size() != ignored.size()) throw std::invalid_argument("one tagged terminal per terminal");
  {
    std::lock_guard<std::recursive_mutex> lock(lexer->arena().mutex());
    for (int32_t node : terminals) {
      if (node < 0 || static_cast<size_t>(node) >= lexer->arena().size()) {
        throw std::invalid_argument("tagged terminal " + std::to_string(node) + " is not in the lexer's arena");
      }
    }
  }
  std::vector<int32_t> always;  // the ignored terminals: a lexeme of one may start anywhere
  for (size_t t = 0; t < ignored.size(); ++t) {
    if (ignored[t]) always.push_back(terminals[t]);
  }
  return [lexer = std::move(lexer), core, parser = std::move(parser), terminals = std::move(terminals),
          always = std::move(always)](int32_t allowed_id) {
    std::vector<int32_t> members = always;
    for (int32_t t : parser->allowed_by_id(allowed_id)) {
      if (t < 0 || static_cast<size_t>(t) >= terminals.size()) throw std::logic_error("allowed terminal out of range");
      members.push_back(terminals[t]);
    }
    const int32_t state = lexer->start(members.data(), members.size());
    lexer->register_states(core->dfa());
    return state;
  };
}

}  // namespace tokamata
