//! The registry of criteria verifiers: registered per tenant over HTTP, or
//! loaded from a file at start (`--verifiers FILE`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::quota::{Quota, MAX_VERIFIERS_PER_TENANT};
use super::{Engine, EngineError};
use crate::domain::{
    parse_verifier, CriteriaVerifier, RequestError, Tenant, VerifierName, VerifierRef,
};
use crate::storage::Registered;

/// Why the verifiers file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum VerifierFileError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl Engine {
    /// `POST /v1/host/sample/verifiers`. A name already taken in the tenant
    /// is a conflict: a registered verifier never changes under the goals
    /// that name it.
    pub async fn register_verifier(
        &self,
        tenant: &Tenant,
        body: &Value,
    ) -> Result<CriteriaVerifier, EngineError> {
        let verifier = parse_verifier(body)?.into_verifier(self.clock.now());
        // Counted and written under the tenant's lock, so racing
        // registrations cannot pass the count together.
        let _registering = self.registering.lock(tenant).await;
        let registered = self.verifiers(tenant).await?;
        let limit = MAX_VERIFIERS_PER_TENANT;
        let taken = registered.iter().any(|known| known.name == verifier.name);
        if !taken && u64::try_from(registered.len()).unwrap_or(u64::MAX) >= limit {
            return Err(EngineError::QuotaExceeded {
                quota: Quota::VerifiersPerTenant,
                limit,
            });
        }
        // Counted again in the store's own write: the lock above is this
        // process's only, and replicas share the quota.
        match self
            .store
            .put_verifier(tenant, &verifier, false, Some(limit))
            .await?
        {
            Registered::Done => Ok(verifier),
            Registered::Taken => Err(EngineError::VerifierExists),
            Registered::Full => Err(EngineError::QuotaExceeded {
                quota: Quota::VerifiersPerTenant,
                limit,
            }),
        }
    }

    pub async fn verifiers(&self, tenant: &Tenant) -> Result<Vec<CriteriaVerifier>, EngineError> {
        let tenant = tenant.clone();
        self.db(move |store| store.verifiers(&tenant)).await
    }

    /// The tenant's verifier of that name; another tenant's is not found.
    pub async fn verifier(
        &self,
        tenant: &Tenant,
        name: &str,
    ) -> Result<CriteriaVerifier, EngineError> {
        let name = VerifierName::parse(name).ok_or(EngineError::NotFound)?;
        self.lookup(|store| store.verifier(tenant, &name))?
            .ok_or(EngineError::NotFound)
    }

    /// Refuses a `verifierRef` naming a verifier the tenant has not
    /// registered (422 `unknown_verifier`); other refs pass.
    pub(super) async fn check_named(
        &self,
        tenant: &Tenant,
        verifier_ref: Option<&VerifierRef>,
        pointer: &str,
    ) -> Result<(), EngineError> {
        let Some(verifier_ref) = verifier_ref else {
            return Ok(());
        };
        let Some(name) = verifier_ref.name() else {
            return Ok(());
        };
        match self.lookup(|store| store.verifier(tenant, name))? {
            Some(_) => Ok(()),
            None => Err(EngineError::Request(RequestError::UnknownVerifier {
                pointer: pointer.to_string(),
                reference: verifier_ref.as_str().to_string(),
            })),
        }
    }

    /// Loads `{"verifiers": [{tenant, name, criteria}, ...]}`, replacing
    /// verifiers of the same tenant and name: the file is the operator's
    /// word. Nothing is stored unless the whole file is valid.
    pub async fn load_verifier_file(&self, path: &Path) -> Result<usize, VerifierFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| VerifierFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |message: String| VerifierFileError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let document: Value =
            serde_json::from_str(&text).map_err(|error| invalid(format!("not JSON: {error}")))?;
        let now = self.clock.now();
        let entries = parse_file(&document).map_err(invalid)?;
        let count = entries.len();
        for (tenant, new) in entries {
            let verifier = new.into_verifier(now);
            self.store
                .put_verifier(&tenant, &verifier, true, None)
                .await
                .map_err(EngineError::from)?;
        }
        Ok(count)
    }
}

fn parse_file(document: &Value) -> Result<Vec<(Tenant, crate::domain::NewVerifier)>, String> {
    let top = document
        .as_object()
        .filter(|top| top.len() == 1)
        .and_then(|top| top.get("verifiers"))
        .and_then(Value::as_array)
        .ok_or_else(|| "expected {\"verifiers\": [...]}".to_string())?;
    let mut seen = BTreeSet::new();
    let mut entries = Vec::with_capacity(top.len());
    for (index, entry) in top.iter().enumerate() {
        let at = format!("/verifiers/{index}");
        let mut entry = entry
            .as_object()
            .cloned()
            .ok_or_else(|| format!("{at}: must be an object"))?;
        let tenant = entry
            .remove("tenant")
            .as_ref()
            .and_then(Value::as_str)
            .and_then(Tenant::parse)
            .ok_or_else(|| format!("{at}/tenant: must name a tenant"))?;
        let new = parse_verifier(&Value::Object(entry)).map_err(|error| match error {
            RequestError::Invalid { pointer, message } => format!("{at}{pointer}: {message}"),
            other => format!("{at}: {other}"),
        })?;
        if !seen.insert((tenant.clone(), new.name.clone())) {
            return Err(format!("{at}: {tenant}/{} is listed twice", new.name));
        }
        entries.push((tenant, new));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_file_lists_verifiers_per_tenant() {
        let criteria = json!([{ "id": "c", "pointer": "/done", "op": "equals", "value": true }]);
        let file = json!({ "verifiers": [
            { "tenant": "acme", "name": "done", "criteria": criteria },
            { "tenant": "globex", "name": "done", "criteria": criteria }
        ] });
        let entries = parse_file(&file).expect("valid");
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].0.as_str(), "globex");

        for (bad, needle) in [
            (json!([]), "expected"),
            (json!({ "verifiers": [], "extra": 1 }), "expected"),
            (
                json!({ "verifiers": [{ "name": "done", "criteria": criteria }] }),
                "/verifiers/0/tenant",
            ),
            (
                json!({ "verifiers": [{ "tenant": "acme", "name": "done", "criteria": [] }] }),
                "/verifiers/0/criteria",
            ),
            (
                json!({ "verifiers": [
                    { "tenant": "acme", "name": "done", "criteria": criteria },
                    { "tenant": "acme", "name": "done", "criteria": criteria }
                ] }),
                "twice",
            ),
        ] {
            let error = parse_file(&bad).expect_err("invalid");
            assert!(error.contains(needle), "{error:?} lacks {needle:?}");
        }
    }
}
