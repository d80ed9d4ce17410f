"""AWS-shaped responses for botocore's Stubber: what the Pricing API and spot history really return."""

from __future__ import annotations

import json
from datetime import datetime


def price_list_item(
    instance_type: str, region: str, usd: str, *, capacity: str = "Used", market: str = "OnDemand"
) -> str:
    """One PriceList entry: a JSON *string*, as GetProducts returns it."""
    sku = f"SKU{abs(hash((instance_type, region, usd, capacity))) % 10**8:08d}"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": instance_type,
                    "regionCode": region,
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": capacity,
                    "marketoption": market,
                    "gpu": "1",
                    "vcpu": "4",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "priceDimensions": {
                            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "beginRange": "0",
                                "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                                "pricePerUnit": {"USD": usd},
                                "appliesTo": [],
                                "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


def spot_record(instance_type: str, zone: str, price: str, at: datetime) -> dict:
    return {
        "AvailabilityZone": zone,
        "InstanceType": instance_type,
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": price,
        "Timestamp": at,
    }
