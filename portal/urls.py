from django.urls import path

from portal import views

urlpatterns = [
    path("portal-sessions", views.PortalSessionListCreateApi.as_view()),
    path("portal-sessions/<str:session_id>", views.PortalSessionDetailApi.as_view()),
]
