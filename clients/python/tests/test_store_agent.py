"""The store client and the agent helper against a real gateway (auth on) in front of the vLLM stand-in."""

from __future__ import annotations

import unittest
from urllib.parse import quote

from rollgate import AgentContext, AgentEnvironmentError, StoreClient

from . import gateway, model

REWARD_SPAN = "agentlightning.annotation"
REWARD_VALUE = "agentlightning.reward.0.value"


def runner_env(url: str, key: str, rollout_id: str, attempt_id: str, task: str) -> dict[str, str]:
    """The variables `rollgate runner` sets for one attempt's process (README, "Running agents")."""
    rid, aid = quote(rollout_id, safe=""), quote(attempt_id, safe="")
    return {
        "OPENAI_BASE_URL": f"{url}/rollout/{rid}/attempt/{aid}/v1",
        "OPENAI_API_KEY": key,
        "ROLLGATE_TASK": task,
        "ROLLGATE_REWARD_URL": f"{url}/v1/agl/rollouts/{rid}/attempts/{aid}/reward",
        "ROLLGATE_ROLLOUT_ID": rollout_id,
        "ROLLGATE_ATTEMPT_ID": attempt_id,
        "ROLLGATE_WORKER_ID": "py-test-0",
        "ROLLGATE_GATEWAY_URL": url,
        "ROLLGATE_MODEL": model(),
        "ROLLGATE_MODE": "train",
    }


class StoreAndAgent(unittest.TestCase):
    def setUp(self) -> None:
        self.url, self.key = gateway()
        self.store = StoreClient(self.url, api_key=self.key)

    def test_enqueue_is_idempotent_and_queryable(self) -> None:
        self.assertTrue(self.store.health())
        first = self.store.enqueue([{"question": "a"}, {"question": "b"}], mode="val", idempotency_key="py-idem-1")
        again = self.store.enqueue([{"question": "a"}, {"question": "b"}], mode="val", idempotency_key="py-idem-1")
        self.assertEqual([r["rollout_id"] for r in first], [r["rollout_id"] for r in again])
        ids = [r["rollout_id"] for r in first]
        page = self.store.query_rollouts(rollout_ids=ids)
        self.assertEqual(sorted(r["rollout_id"] for r in page.items), sorted(ids))
        self.assertEqual(page.total, 2)
        self.assertEqual({r["mode"] for r in page.items}, {"val"})
        self.assertIsNone(self.store.get_rollout("no-such-rollout"))
        self.assertEqual(self.store.get_rollout(ids[0])["input"], {"question": "a"})

    def test_enqueue_past_the_gateways_request_limit_is_split_in_order(self) -> None:
        # The gateway refuses more than 5,000 rollouts in one request (413); the client sends two, in order, and a
        # retry with the same key stores nothing twice.
        inputs = [{"question": f"split-{i}"} for i in range(5_001)]
        first = self.store.enqueue(inputs, mode="val", idempotency_key="py-split-1")
        self.assertEqual([r["input"] for r in first], inputs)
        again = self.store.enqueue(inputs, mode="val", idempotency_key="py-split-1")
        self.assertEqual([r["rollout_id"] for r in again], [r["rollout_id"] for r in first])
        # Claimed, so later tests' dequeues (FIFO) do not get these first.
        mine, claimed = {r["rollout_id"] for r in first}, set()
        while not mine <= claimed:
            batch = self.store.dequeue(worker_id="py-split", limit=1000)
            self.assertTrue(batch, "the split rollouts were not all queued")
            claimed |= {r["rollout_id"] for r in batch}

    def test_queries_follow_the_gateways_pages(self) -> None:
        # More rollouts than the gateway's largest page (1000): the client reads every page.
        inputs = [{"question": f"paged-{i}"} for i in range(1205)]
        ids = [r["rollout_id"] for r in self.store.enqueue(inputs, mode="val")]
        page = self.store.query_rollouts(rollout_ids=ids)
        self.assertEqual([r["rollout_id"] for r in page.items], ids)
        self.assertEqual((page.total, page.limit), (1205, -1))
        some = self.store.query_rollouts(rollout_ids=ids, limit=1100, offset=50)
        self.assertEqual([r["rollout_id"] for r in some.items], ids[50:1150])
        # Claimed in one call, so later tests' dequeues (FIFO) do not get these first.
        claimed = self.store.dequeue(worker_id="py-paged", limit=len(ids) + 100)
        self.assertLessEqual(set(ids), {r["rollout_id"] for r in claimed})

    def test_an_agent_run_end_to_end_through_the_helper(self) -> None:
        [queued] = self.store.enqueue([{"question": "What is 2+2?", "answer": "4"}])
        claimed = self.store.dequeue(worker_id="py-test-0", limit=10, wait_s=1)
        mine = [r for r in claimed if r["rollout_id"] == queued["rollout_id"]]
        self.assertEqual(len(mine), 1)
        attempt = mine[0]["attempt"]
        rid, aid = queued["rollout_id"], attempt["attempt_id"]

        ctx = AgentContext.from_env(runner_env(self.url, self.key, rid, aid, '{"question": "What is 2+2?", "answer": "4"}'))
        self.assertEqual((ctx.rollout_id, ctx.attempt_id, ctx.model, ctx.mode), (rid, aid, model(), "train"))
        reply = ctx.chat_text([{"role": "user", "content": ctx.task["question"]}], max_tokens=16)
        self.assertIn("4", reply)
        ctx.post_reward(1.0 if ctx.task["answer"] in reply else 0.0)

        spans = self.store.query_spans(rid).items
        rewards = [s for s in spans if s["name"] == REWARD_SPAN]
        calls = [s for s in spans if s["name"] != REWARD_SPAN]
        self.assertEqual([s["attributes"][REWARD_VALUE] for s in rewards], [1.0])
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0]["attempt_id"], aid)
        self.assertGreater(rewards[0]["sequence_id"], calls[0]["sequence_id"])

        # A script can post a reward too, to the latest attempt by default.
        span = self.store.post_reward(rid, 0.25, name="style")
        self.assertEqual(span["attempt_id"], aid)
        self.assertEqual(len(self.store.query_spans(rid, name=REWARD_SPAN).items), 2)

        # Finishing the attempt finishes the rollout; the wait returns it.
        self.store.update_attempt(rid, aid, status="succeeded")
        finished = self.store.wait_for_rollouts([rid], timeout_s=10)
        self.assertEqual([(r["rollout_id"], r["status"]) for r in finished], [(rid, "succeeded")])
        self.assertEqual(self.store.query_attempts(rid).items[0]["status"], "succeeded")

    def test_wait_times_out_with_what_has_finished(self) -> None:
        [pending] = self.store.enqueue([{"question": "never run"}])
        self.assertEqual(self.store.wait_for_rollouts([pending["rollout_id"]], timeout_s=0.2), [])


class AgentEnvironment(unittest.TestCase):
    def test_missing_variables_name_the_runner(self) -> None:
        with self.assertRaisesRegex(AgentEnvironmentError, "OPENAI_BASE_URL.*rollgate runner"):
            AgentContext.from_env({"ROLLGATE_TASK": "{}"})

    def test_task_must_be_json(self) -> None:
        env = {"OPENAI_BASE_URL": "http://gw/v1", "OPENAI_API_KEY": "k", "ROLLGATE_REWARD_URL": "http://gw/r",
               "ROLLGATE_TASK": "{not json"}
        with self.assertRaisesRegex(AgentEnvironmentError, "ROLLGATE_TASK is not valid JSON"):
            AgentContext.from_env(env)

    def test_rewards_must_be_finite(self) -> None:
        env = {"OPENAI_BASE_URL": "http://gw/v1", "OPENAI_API_KEY": "k", "ROLLGATE_REWARD_URL": "http://gw/r",
               "ROLLGATE_TASK": "1"}
        with self.assertRaises(ValueError):
            AgentContext.from_env(env).post_reward(float("nan"))


if __name__ == "__main__":
    unittest.main()
