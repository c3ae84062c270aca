from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from .models import Ping


class CeilingView(APIView):
    """One DRF view doing one INSERT: the most the stack can do, to compare the platform with."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    def post(self, request):
        ping = Ping.objects.create(value=int(request.data.get("value", 0)))
        return Response({"id": ping.pk}, status=201)
