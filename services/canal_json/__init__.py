"""Alibaba Canal flat JSON (also OceanBase OMS "Canal" serialization)."""
