"""Which client errors the runtime rides out (an outage) and which still stop it."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from streams.client_errors import transient

OUTAGE = [
    KafkaError._MSG_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._DESTROY_BROKER,
    KafkaError._TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.OFFSET_NOT_AVAILABLE,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
]
STOPS = [
    KafkaError._FENCED,
    KafkaError.INVALID_PRODUCER_EPOCH,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    KafkaError.MSG_SIZE_TOO_LARGE,
]


@pytest.mark.parametrize("code", OUTAGE)
def test_outage_errors_are_ridden_out(code: int) -> None:
    assert transient(KafkaError(code))


@pytest.mark.parametrize("code", STOPS)
def test_fencing_authorization_and_refusals_still_stop_the_instance(code: int) -> None:
    assert not transient(KafkaError(code))


def test_an_abortable_transaction_error_is_ridden_out_but_fencing_never_is() -> None:
    assert transient(KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, txn_requires_abort=True))
    assert not transient(KafkaError(KafkaError._FENCED, fatal=True, txn_requires_abort=True))
