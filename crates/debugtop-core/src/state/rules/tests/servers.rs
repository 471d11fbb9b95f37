//! The server-unresponsive rule (`rules/servers.rs`).

use crate::model::{FindingKind, HealthError};
use crate::testing::ObservationBuilder as Obs;

use super::{held, kinds};

#[test]
fn server_unresponsive_when_health_fails_not_when_it_answers() {
    let e = HealthError::TimedOut {
        url: "http://127.0.0.1:3001/health".into(),
        ms: 700,
    };
    let f = held(|t| Obs::at(t).health(Err(e.clone())).build());
    assert_eq!(kinds(&f), [FindingKind::ServerUnresponsive]);
    assert!(f[0].evidence[0].contains("no answer within 700 ms"));
    assert!(held(|t| Obs::at(t).build()).is_empty());
}
