// The implementation of proxy/sessions.hpp: a request's session and turn.
#include "proxy/sessions.hpp"

#include <openssl/sha.h>

#include "core/text.hpp"

namespace mpo::proxy {

std::string_view session_source(SessionEvidence e) {
  switch (e) {
    case SessionEvidence::kHeader: return "header";
    case SessionEvidence::kPreviousResponse:
    case SessionEvidence::kChainRoot: return "previous_response_id";
    case SessionEvidence::kMetadataUserId: return "metadata.user_id";
    case SessionEvidence::kUser: return "user";
    case SessionEvidence::kSafetyIdentifier: return "safety_identifier";
  }
  return "header";
}

std::string identity_digest(std::string_view value) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(value.data()), value.size(), md);
  std::string out = "sha256:";
  out.resize(out.size() + 16);
  write_hex_lower(out.data() + 7, md, 8);
  return out;
}

std::optional<SessionClaim> session_claim(std::optional<std::string_view> header, const openai::RequestInfo& info) {
  const bool responses = info.operation == openai::Operation::kResponses;
  if (header && !header->empty()) return SessionClaim{SessionEvidence::kHeader, std::string(*header), responses};
  if (info.previous_response_id)
    return SessionClaim{SessionEvidence::kPreviousResponse, *info.previous_response_id, responses};
  if (info.metadata_user_id)
    return SessionClaim{SessionEvidence::kMetadataUserId, identity_digest(*info.metadata_user_id), responses};
  if (info.user) return SessionClaim{SessionEvidence::kUser, identity_digest(*info.user), responses};
  if (info.safety_identifier)
    return SessionClaim{SessionEvidence::kSafetyIdentifier, identity_digest(*info.safety_identifier), responses};
  if (responses) return SessionClaim{SessionEvidence::kChainRoot, "", true};
  return std::nullopt;
}

SessionPlace SessionTable::begin(const SessionClaim& claim) {
  SessionPlace place;
  place.source = std::string(session_source(claim.evidence));
  switch (claim.evidence) {
    case SessionEvidence::kChainRoot:
      place.turn = 1;  // its session is its own response's id, known at finish
      return place;
    case SessionEvidence::kPreviousResponse: {
      const auto link = links_.find(claim.key);
      if (link == links_.end()) {
        place.session_id = claim.key;  // a chain this proxy did not see begin: its turn is unknown
        return place;
      }
      place.session_id = link->second.session_id;
      if (const auto counted = turns_.find(link->second.session_id); counted != turns_.end()) {
        place.turn = ++counted->second;  // a session a header or an identity counts: one count
      } else if (link->second.turn) {
        place.turn = *link->second.turn + 1;
      }
      return place;
    }
    default: break;
  }
  auto [it, fresh] = turns_.try_emplace(claim.key, 0);
  if (fresh) {
    order_.push_back(Entry{false, claim.key});
    forget_oldest();
    it = turns_.find(claim.key);
  }
  place.session_id = claim.key;
  place.turn = ++it->second;
  return place;
}

void SessionTable::finish(const SessionClaim& claim, const std::optional<std::string>& response_id,
                          SessionPlace& place) {
  const bool has_id = response_id && !response_id->empty();
  if (claim.evidence == SessionEvidence::kChainRoot && has_id) place.session_id = *response_id;
  if (!place.session_id) {
    place = SessionPlace{};  // a chain root whose response never came: no session to name
    return;
  }
  if (!claim.responses || !has_id) return;
  if (links_.try_emplace(*response_id, Link{*place.session_id, place.turn}).second) {
    order_.push_back(Entry{true, *response_id});
    forget_oldest();
  }
}

void SessionTable::forget_oldest() {
  while (order_.size() > capacity_) {
    const Entry& oldest = order_.front();
    if (oldest.link)
      links_.erase(oldest.key);
    else
      turns_.erase(oldest.key);
    order_.pop_front();
  }
}

}  // namespace mpo::proxy
