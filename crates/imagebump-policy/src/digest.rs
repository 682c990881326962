//! The `digest` strategy: follow one mutable tag (`latest`, `stable`) and pin the digest it
//! points to when that changes. Costs one manifest HEAD per distinct tag, no tag list.

use super::evaluate::{Choice, Evaluation, Verdict};

impl Evaluation<'_> {
    pub(super) fn decide_digest(&mut self) -> Choice {
        let Some(i) = self.current_index else {
            return Choice::Skip(format!(
                "tag {:?} is not in the repository (digest strategy)",
                self.current
            ));
        };
        match self.meta.get(&i).cloned() {
            None => Choice::Skip("the tag's digest was not fetched".into()),
            Some(Err(e)) => {
                self.set_verdict(i, Verdict::NoMetadata(e.clone()));
                Choice::Skip(e)
            }
            Some(Ok(m)) => {
                if let Some(v) = self.meta_verdict(&m) {
                    self.set_verdict(i, v);
                    return Choice::Current;
                }
                if self.current_digest.as_deref() == Some(m.digest.as_str()) {
                    self.set_verdict(i, Verdict::SameImage);
                    return Choice::Current;
                }
                self.set_verdict(i, Verdict::Chosen);
                Choice::Update {
                    tag: self.current.clone(),
                    digest: Some(m.digest),
                }
            }
        }
    }
}
